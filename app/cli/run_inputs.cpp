#include "run_inputs.h"
#include "shape_specs.h"

#include <kiln/error.h>
#include <kiln/npy.h>
#include <kiln/onnx_importer.h>

#include "kernels/cpu/common/numeric_types.h"  // the element types HostTensor::data<T>() names

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>

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

std::vector<int64_t> shapeForRandom(const Tensor& declared, const std::optional<std::vector<int64_t>>& given) {
  const std::string& name = declared.name;
  if (given) {
    checkFitsDeclared(declared, *given, "--shapes " + name);
    return *given;
  }
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

// SplitMix64: tiny, seedable, and gives the same numbers on every platform (unlike std distributions).
class RandomBits {
 public:
  explicit RandomBits(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

uint64_t hashName(const std::string& name) {  // FNV-1a: stable across runs and platforms
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// Sensible, never-zero values: floats in [-1, 1), signed ints in [-10, 10], unsigned in [1, 20].
template <class T>
T randomValue(RandomBits& bits) {
  if constexpr (std::is_same_v<T, bool>) {
    return (bits.next() & 1) != 0;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "kiln" + std::to_string(bits.next() % 1000);
  } else if constexpr (std::is_integral_v<T>) {
    int64_t k = int64_t(bits.next() % 20);
    if constexpr (std::is_signed_v<T>) return T(k < 10 ? k - 10 : k - 9);
    else return T(k + 1);
  } else {
    double v = bits.uniform() * 2 - 1;
    if (std::abs(v) < 1.0 / 64) v = 0.5;  // keeps reduced-precision types away from zero
    if constexpr (std::is_same_v<T, double>) return v;
    else return T(float(v));
  }
}

template <class T>
void fillRandom(HostTensor& tensor, RandomBits& bits) {
  T* out = tensor.data<T>();
  for (int64_t i = 0; i < tensor.elementCount(); ++i) out[i] = randomValue<T>(bits);
}

HostTensor randomTensor(const Tensor& declared, std::vector<int64_t> dims, uint64_t seed) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d != 0 && count > kMaxRandomElements / d)
      usage("input '" + declared.name + "' of shape " + dimsToString(dims) + " is too large to generate; check --shapes");
    count *= d;
  }
  if (declared.dtype == DataType::kUndefined)
    usage("input '" + declared.name + "' declares no element type; give it with --input " + declared.name + "=FILE");
  HostTensor tensor(declared.dtype, std::move(dims));
  RandomBits bits(seed ^ hashName(declared.name));
  switch (declared.dtype) {
    case DataType::kFloat32: fillRandom<float>(tensor, bits); break;
    case DataType::kFloat16: fillRandom<kernels::Float16>(tensor, bits); break;
    case DataType::kBFloat16: fillRandom<kernels::BFloat16>(tensor, bits); break;
    case DataType::kFloat64: fillRandom<double>(tensor, bits); break;
    case DataType::kFloat8E4M3: fillRandom<kernels::Float8E4M3>(tensor, bits); break;
    case DataType::kFloat8E5M2: fillRandom<kernels::Float8E5M2>(tensor, bits); break;
    case DataType::kInt8: fillRandom<int8_t>(tensor, bits); break;
    case DataType::kInt16: fillRandom<int16_t>(tensor, bits); break;
    case DataType::kInt32: fillRandom<int32_t>(tensor, bits); break;
    case DataType::kInt64: fillRandom<int64_t>(tensor, bits); break;
    case DataType::kUInt8: fillRandom<uint8_t>(tensor, bits); break;
    case DataType::kUInt16: fillRandom<uint16_t>(tensor, bits); break;
    case DataType::kUInt32: fillRandom<uint32_t>(tensor, bits); break;
    case DataType::kUInt64: fillRandom<uint64_t>(tensor, bits); break;
    case DataType::kBool: fillRandom<bool>(tensor, bits); break;
    case DataType::kString: fillRandom<std::string>(tensor, bits); break;
    case DataType::kUndefined: break;
  }
  return tensor;
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
    prepared.push_back({name, Value(randomTensor(declared, shapeForRandom(declared, given), request.seed)), ""});
  }
  return prepared;
}

}  // namespace kiln::cli
