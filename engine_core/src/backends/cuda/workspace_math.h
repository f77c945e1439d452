#pragma once
// The arithmetic the CUDA steps share when they lay out their workspace: every part starts on
// 256 bytes (what cuBLASLt and cuDNN want of their workspace, and 16-byte vectors of every kernel).
// Element counts of dims are kiln::elementCount (kiln/shape.h).
#include <cstdint>

namespace kiln::cuda {

inline constexpr uint64_t kWorkspaceAlignment = 256;

inline uint64_t alignUp(uint64_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

}  // namespace kiln::cuda
