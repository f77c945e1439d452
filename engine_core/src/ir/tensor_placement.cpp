#include "tensor_placement.h"

namespace kiln {

const char* toString(TensorFormat format) { return format == TensorFormat::kNHWC ? "nhwc" : "linear"; }
const char* toString(MemorySpace space) { return space == MemorySpace::kDevice ? "device" : "host"; }

std::optional<TensorFormat> parseTensorFormat(const std::string& name) {
  if (name == "linear") return TensorFormat::kLinear;
  if (name == "nhwc") return TensorFormat::kNHWC;
  return std::nullopt;
}

std::optional<MemorySpace> parseMemorySpace(const std::string& name) {
  if (name == "host") return MemorySpace::kHost;
  if (name == "device") return MemorySpace::kDevice;
  return std::nullopt;
}

}  // namespace kiln
