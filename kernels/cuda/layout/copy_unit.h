#pragma once
// Data movement copies in the widest unit (element size up to 16 bytes) that the run lengths,
// offsets and addresses allow: a contiguous run of fp16 moves as 16-byte vectors, and the kernels
// are instantiated once per unit size instead of once per dtype.
#include <cstdint>
#include <initializer_list>

namespace kiln::kernels::cuda {

constexpr int kMaxCopyUnitBytes = 16;

// The widest power of two from elementBytes up to 16 that divides every byte count given (run
// lengths, distances between runs, addresses). Negative distances are fine.
inline int copyUnitBytes(int elementBytes, std::initializer_list<int64_t> byteCounts) {
  int unit = elementBytes;
  while (unit < kMaxCopyUnitBytes) {
    const int wider = unit * 2;
    bool fits = true;
    for (int64_t bytes : byteCounts) fits = fits && bytes % wider == 0;
    if (!fits) break;
    unit = wider;
  }
  return unit;
}

inline int64_t addressOf(const void* p) { return int64_t(reinterpret_cast<uintptr_t>(p)); }

}  // namespace kiln::kernels::cuda
