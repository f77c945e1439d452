#include "run_inputs.h"
#include "shape_specs.h"

#include <kiln/error.h>
#include <kiln/npy.h>
#include <kiln/onnx_importer.h>
#include <kiln/random_data.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace kiln::cli {
namespace {

// Random inputs above this size are almost certainly a typo in --shapes.
constexpr int64_t kMaxRandomElements = int64_t(1) << 31;

[[noreturn]] void usage(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, message); }

std::string joined(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "'" : ", '") + n + "'";
  return text;
}

void requireModelInput(const Network& net, const std::string& name, const std::string& option) {
  auto inputs = net.runtimeInputs();
  if (std::find(inputs.begin(), inputs.end(), name) == inputs.end())
    usage(option + " names '" + name + "', which is not an input of the model; its inputs are: " + joined(inputs));
}

ShapeMap parseShapes(const Network& net, const std::vector<std::string>& specs) {
  ShapeMap shapes = parseShapeList(specs, "--shapes");
  for (const auto& [name, dims] : shapes) requireModelInput(net, name, "--shapes");
  return shapes;
}

std::map<std::string, std::string> parseInputFiles(const Network& net, const std::vector<std::string>& specs) {
  std::map<std::string, std::string> files;
  for (const auto& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      usage("--input '" + spec + "' must look like NAME=FILE (a .npy or ONNX TensorProto .pb file)");
    std::string name = spec.substr(0, eq);
    requireModelInput(net, name, "--input");
    if (!files.emplace(name, spec.substr(eq + 1)).second) usage("--input gives input '" + name + "' twice");
  }
  return files;
}

// `dims` must fit the declared shape: same rank, and equal wherever the model fixes a dim.
void checkFitsDeclared(const Tensor& declared, const std::vector<int64_t>& dims, const std::string& what) {
  if (!declared.shape.hasRank()) return;
  bool fits = declared.shape.rank() == dims.size();
  for (size_t d = 0; fits && d < dims.size(); ++d)
    fits = !declared.shape[d].isKnown() || declared.shape[d].value() == dims[d];
  if (!fits)
    usage(what + " has shape " + dimsToString(dims) + ", but the model declares input '" + declared.name +
          "' as " + declared.shape.toString());
}

bool startsWithNpyMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[6] = {};
  return in.read(magic, sizeof magic) && std::string_view(magic, sizeof magic) == "\x93NUMPY";
}

Value loadInputFile(const Tensor& declared, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    usage("--input " + declared.name + "=" + path + ": the file does not exist or is not a regular file");
  if (!startsWithNpyMagic(path)) return readValueProtoFile(path, declared.kind);
  if (declared.kind != ValueKind::kTensor)
    usage("input '" + declared.name + "' is a " + std::string(toString(declared.kind)) +
          "; give it as an ONNX .pb file (SequenceProto / OptionalProto), not .npy");
  return Value(readNpyFile(path));
}

std::vector<int64_t> shapeForRandom(const Tensor& declared, const std::optional<std::vector<int64_t>>& given,
                                    const InputRequest& request) {
  const std::string& name = declared.name;
  if (given) {
    checkFitsDeclared(declared, *given, "--shapes " + name);
    return *given;
  }
  if (auto fallback = request.defaultShapes.find(name); fallback != request.defaultShapes.end()) return fallback->second;
  if (!declared.shape.hasRank())
    usage("input '" + name + "' has no declared shape; give one with --shapes " + name + ":DIMS (e.g. 1x3x224x224)");
  std::string example;
  for (const Dim& d : declared.shape.dims()) example += (example.empty() ? "" : "x") + std::to_string(d.isKnown() ? d.value() : 1);
  for (size_t d = 0; d < declared.shape.rank(); ++d)
    if (!declared.shape[d].isKnown())
      usage("input '" + name + "' dimension " + std::to_string(d) + " ('" + declared.shape[d].toString() +
            "') is not fixed by the model; give the full shape with --shapes " + name + ":" + example);
  return declared.shape.knownDims();
}

HostTensor randomInput(const Tensor& declared, std::vector<int64_t> dims, uint64_t seed) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d != 0 && count > kMaxRandomElements / d)
      usage("input '" + declared.name + "' of shape " + dimsToString(dims) + " is too large to generate; check --shapes");
    count *= d;
  }
  if (declared.dtype == DataType::kUndefined)
    usage("input '" + declared.name + "' declares no element type; give it with --input " + declared.name + "=FILE");
  return randomTensor(declared.dtype, std::move(dims), seedForTensor(seed, declared.name));
}

}  // namespace

std::vector<PreparedInput> prepareInputs(const Network& net, const InputRequest& request) {
  ShapeMap shapes = parseShapes(net, request.shapes);
  auto files = parseInputFiles(net, request.inputFiles);
  std::vector<PreparedInput> prepared;
  for (const auto& name : net.runtimeInputs()) {
    const Tensor& declared = net.tensor(name);
    auto shape = shapes.find(name);
    auto file = files.find(name);
    if (file != files.end()) {
      Value value = loadInputFile(declared, file->second);
      if (shape != shapes.end() && !value.isSequence() && value.tensor.dims() != shape->second)
        usage("--input " + name + "=" + file->second + " has shape " + dimsToString(value.tensor.dims()) +
              ", but --shapes gives " + dimsToString(shape->second));
      prepared.push_back({name, std::move(value), file->second});
      continue;
    }
    if (declared.kind != ValueKind::kTensor)
      usage("input '" + name + "' is a " + std::string(toString(declared.kind)) +
            ", which kiln run cannot generate; give it with --input " + name + "=FILE.pb");
    std::optional<std::vector<int64_t>> given;
    if (shape != shapes.end()) given = shape->second;
    prepared.push_back({name, Value(randomInput(declared, shapeForRandom(declared, given, request), request.seed)), ""});
  }
  return prepared;
}

}  // namespace kiln::cli
