#include "artifact.h"
#include "rank_plans.h"

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

Artifact loadArtifact(const std::string& path, int ranks) {
  Artifact a;
  a.path = path;
  if (ranks < 1) throw Error(ErrorCode::kInvalidArgument, "--ranks must be 1 or more, got " + std::to_string(ranks));
  if (ranks > 1 && std::ifstream(path) && !isPlanFile(path))
    throw Error(ErrorCode::kInvalidArgument,
                "--ranks runs the plans of `kiln build --tensor-parallel`; '" + path + "' is not a plan");
  if (ranks > 1 || isPlanFile(path)) {
    if (ranks > 1) {
      a.ranks = loadRankPlans(path, ranks);
      a.engine = a.ranks[0];
      a.runner = [engines = a.ranks](const std::map<std::string, HostTensor>& inputs, const TensorObserver&) {
        return runRanks(engines, inputs)[0];  // every rank holds the same outputs
      };
    } else {
      a.engine = Runtime().loadFile(path);
      const PlanInfo& info = a.engine->planInfo();
      if (info.worldSize > 1)
        throw Error(ErrorCode::kInvalidArgument,
                    "'" + path + "' is rank " + std::to_string(info.rank) + " of a " + std::to_string(info.worldSize) +
                        "-rank tensor-parallel split; run every rank with --ranks " + std::to_string(info.worldSize));
      a.runner = makeEngineRunner(a.engine);
    }
    a.network = std::make_shared<Network>();
    for (const auto& io : a.engine->ioTensors()) {
      if (io.isInput) a.network->addInput(io.name, io.dtype, io.shape);
      else a.network->markOutput(io.name);
    }
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
