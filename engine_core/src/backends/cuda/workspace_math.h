#pragma once
// The arithmetic the CUDA steps share when they lay out their workspace: every part starts on
// 256 bytes (what cuBLASLt and cuDNN want of their workspace, and 16-byte vectors of every kernel),
// and the element counts of dims.
#include <cstdint>
#include <vector>

namespace kiln::cuda {

inline constexpr uint64_t kWorkspaceAlignment = 256;

inline uint64_t alignUp(uint64_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

inline int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace kiln::cuda
