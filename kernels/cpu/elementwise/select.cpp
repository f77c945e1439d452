// Where: a three-input broadcast that only moves elements, so it is instantiated per element size.
#include "binary.h"
#include "broadcast_loops.h"

namespace kiln::kernels {

template <class T>
void select(const bool* condition, const T* x, const T* y, T* out, const BroadcastPlan& plan) {
  withInnerSteps<3>(plan, [&](auto stepC, auto stepX, auto stepY) {
    constexpr int kStepC = decltype(stepC)::value, kStepX = decltype(stepX)::value,
                  kStepY = decltype(stepY)::value;
    parallelFor(plan.outputCount(), 1 << 15, [&](int64_t begin, int64_t end) {
      plan.forEachRun(begin, end, [&](int64_t outOffset, const int64_t* inOffsets, int64_t length) {
        const bool* c = condition + inOffsets[0];
        const T* px = x + inOffsets[1];
        const T* py = y + inOffsets[2];
        T* po = out + outOffset;
        for (int64_t i = 0; i < length; ++i) po[i] = c[i * kStepC] ? px[i * kStepX] : py[i * kStepY];
      });
    });
  });
}

template void select<uint8_t>(const bool*, const uint8_t*, const uint8_t*, uint8_t*, const BroadcastPlan&);
template void select<uint16_t>(const bool*, const uint16_t*, const uint16_t*, uint16_t*, const BroadcastPlan&);
template void select<uint32_t>(const bool*, const uint32_t*, const uint32_t*, uint32_t*, const BroadcastPlan&);
template void select<uint64_t>(const bool*, const uint64_t*, const uint64_t*, uint64_t*, const BroadcastPlan&);
template void select<std::string>(const bool*, const std::string*, const std::string*, std::string*,
                                  const BroadcastPlan&);

}  // namespace kiln::kernels
