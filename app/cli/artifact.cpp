#include "artifact.h"

#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/runners.h>

#include <fstream>

namespace kiln::cli {

bool isPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, sizeof magic) && std::string(magic, sizeof magic) == "KILNPLAN";
}

Artifact loadArtifact(const std::string& path) {
  Artifact a;
  a.path = path;
  if (isPlanFile(path)) {
    a.engine = Runtime().loadFile(path);
    a.network = std::make_shared<Network>();
    for (const auto& io : a.engine->ioTensors()) {
      if (io.isInput) a.network->addInput(io.name, io.dtype, io.shape);
      else a.network->markOutput(io.name);
    }
    a.runner = makeEngineRunner(a.engine);
    if (!a.engine->profiles().empty())
      for (const auto& [name, range] : a.engine->profiles().front().inputs) a.defaultShapes[name] = range.opt;
  } else {
    a.network = OnnxImporter().importFile(path);
    a.runner = makeReferenceRunner(a.network);
  }
  return a;
}

std::map<std::string, HostTensor> tensorInputs(const std::map<std::string, Value>& values) {
  std::map<std::string, HostTensor> out;
  for (const auto& [name, v] : values) {
    if (v.isSequence() || !v.hasElement)
      throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' is a " + std::string(toString(v.kind)) +
                                                   "; this command takes tensor inputs only");
    out[name] = v.tensor;
  }
  return out;
}

}  // namespace kiln::cli
