#include "calibration_cache.h"

#include <kiln/error.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <type_traits>

namespace kiln::calibration {
namespace {

constexpr const char* kFormatLine = "# kiln calibration cache 1";

class Fnv1a {
 public:
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) hash_ = (hash_ ^ p[i]) * 1099511628211ull;
  }
  // Strings end with their length, so that ("ab", "c") and ("a", "bc") differ.
  void text(const std::string& s) {
    bytes(s.data(), s.size());
    number(int64_t(s.size()));
  }
  void number(int64_t v) { bytes(&v, sizeof v); }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 14695981039346656037ull;
};

void hashTensor(Fnv1a& h, const HostTensor& t) {
  h.text(std::string(toString(t.dtype())));
  for (int64_t d : t.dims()) h.number(d);
  if (t.dtype() == DataType::kString) return;  // string constants hold pointers, not bytes
  h.bytes(t.rawData(), t.byteSize());
}

void hashNetwork(Fnv1a& h, const Network& network);

void hashAttribute(Fnv1a& h, const Attribute& attribute) {
  h.text(std::string(attribute.typeName()));
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) h.number(v);
        else if constexpr (std::is_same_v<T, float>) h.bytes(&v, sizeof v);
        else if constexpr (std::is_same_v<T, std::string>) h.text(v);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) for (int64_t x : v) h.number(x);
        else if constexpr (std::is_same_v<T, std::vector<float>>) h.bytes(v.data(), v.size() * sizeof(float));
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) for (const auto& s : v) h.text(s);
        else if constexpr (std::is_same_v<T, HostTensor>) hashTensor(h, v);
        else if constexpr (std::is_same_v<T, Attribute::Graph>) { if (v) hashNetwork(h, *v); }
        else for (const auto& g : v) if (g) hashNetwork(h, *g);
      },
      attribute.value());
}

void hashNetwork(Fnv1a& h, const Network& network) {
  for (const auto& name : network.inputs()) {
    const Tensor& t = network.tensor(name);
    h.text(name);
    h.text(std::string(toString(t.dtype)));
    h.text(t.shape.toString());
  }
  for (const auto& name : network.outputs()) h.text(name);
  for (const Layer& layer : network.layers()) {
    for (const auto& s : {layer.name, layer.domain, layer.opType}) h.text(s);
    h.number(layer.opsetVersion);
    for (const auto& in : layer.inputs) h.text(in);
    for (const auto& out : layer.outputs) h.text(out);
    for (const auto& [key, attribute] : layer.attributes) {
      h.text(key);
      hashAttribute(h, attribute);
    }
  }
  for (const auto& name : network.tensorNames()) {
    const Tensor& t = network.tensor(name);
    if (!t.isConstant()) continue;
    h.text(name);
    hashTensor(h, *t.constant);
  }
}

[[noreturn]] void malformed(const std::string& source, size_t line, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "calibration cache " + source + " line " + std::to_string(line) + ": " +
                                               why + "; delete the file to calibrate again");
}

}  // namespace

std::string networkFingerprint(const Network& network) {
  Fnv1a h;
  hashNetwork(h, network);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h.value()));
  return hex;
}

std::string formatCalibrationCache(const CalibrationCache& cache) {
  std::string out = std::string(kFormatLine) + "\n# model " + cache.model + "\n# calibrator " + cache.calibrator + "\n";
  for (const auto& [tensor, scale] : cache.scales) {
    char number[32];
    std::snprintf(number, sizeof number, "%.9g", double(scale));  // 9 digits: the float comes back exactly
    out += tensor + ": " + number + "\n";
  }
  return out;
}

CalibrationCache parseCalibrationCache(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  CalibrationCache cache;
  auto header = [&](size_t number, const std::string& prefix) {
    if (!std::getline(in, line) || line.rfind(prefix, 0) != 0)
      malformed(source, number, "expected a header line '" + prefix + "...'");
    return line.substr(prefix.size());
  };
  if (!std::getline(in, line) || line != kFormatLine)
    malformed(source, 1, "this is not a Kiln calibration cache (its first line must be '" + std::string(kFormatLine) + "')");
  cache.model = header(2, "# model ");
  cache.calibrator = header(3, "# calibrator ");
  for (size_t number = 4; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const size_t colon = line.rfind(": ");
    if (colon == std::string::npos || colon == 0) malformed(source, number, "expected 'tensor: scale'");
    const std::string value = line.substr(colon + 2);
    char* end = nullptr;
    const float scale = std::strtof(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(scale) || scale <= 0)
      malformed(source, number, "'" + value + "' is not a positive scale");
    cache.scales[line.substr(0, colon)] = scale;
  }
  return cache;
}

}  // namespace kiln::calibration
