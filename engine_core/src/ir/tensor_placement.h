#pragma once
// Where and how a tensor lives between layers: the build decisions that plans record and the
// runtime follows (it converts nothing itself; the builder inserts Copy, Cast and Reformat layers
// where neighbours disagree).
#include <cstdint>
#include <optional>
#include <string>

namespace kiln {

// How a tensor's elements are laid out.
enum class TensorFormat : uint8_t {
  kLinear,  // row-major in the declared dim order (NCHW for images)
  kNHWC,    // channels last (4-D tensors; the dims stay N, C, H, W)
};

// Which memory a tensor lives in: host memory (the CPU backend), or a device backend's memory,
// which the runtime never reads or writes directly.
enum class MemorySpace : uint8_t { kHost, kDevice };

const char* toString(TensorFormat format);
const char* toString(MemorySpace space);
std::optional<TensorFormat> parseTensorFormat(const std::string& name);
std::optional<MemorySpace> parseMemorySpace(const std::string& name);

}  // namespace kiln
