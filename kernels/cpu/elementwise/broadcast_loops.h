#pragma once
// The driver the broadcasting kernels share: picks the inner loop for the plan's run pattern once,
// splits the output across threads, and for Float16/BFloat16 converts each run through float tiles.
#include "broadcast.h"
#include "element_types.h"
#include "kernels/cpu/common/parallel.h"

#include <algorithm>
#include <type_traits>

namespace kiln::kernels {

template <int Step>
using StepConstant = std::integral_constant<int, Step>;

// Calls fn(StepConstant<s0>{}, StepConstant<s1>{}, ...) with the inner step (0 or 1) of each of
// the plan's first Inputs inputs.
template <int Inputs, class Fn, class... Steps>
void withInnerSteps(const BroadcastPlan& plan, Fn&& fn, Steps... steps) {
  if constexpr (Inputs == 0) {
    fn(steps...);
  } else {
    constexpr int kInput = int(sizeof...(Steps));
    if (plan.innerContiguous(kInput)) withInnerSteps<Inputs - 1>(plan, fn, steps..., StepConstant<1>{});
    else withInnerSteps<Inputs - 1>(plan, fn, steps..., StepConstant<0>{});
  }
}

// The first `count` elements at p as compute types: converted into `tile` for the 16-bit floats,
// p itself otherwise.
template <class T>
const ComputeType<T>* computeView(const T* p, int64_t count, ComputeType<T>* tile) {
  if constexpr (kIsHalfFloat<T>) {
    widen(p, tile, count);
    return tile;
  } else {
    return p;
  }
}

// Types common enough in models to get an inner loop per run pattern; the others share one loop
// with run-time steps, which keeps the kernels' code size (and build time) in check.
template <class T>
inline constexpr bool kHasPatternLoops =
    std::is_same_v<T, float> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, bool>;

// Calls fn(stepA, stepB): compile-time step constants for common types, run-time ints otherwise.
template <class A, class B, class Fn>
void withBinarySteps(const BroadcastPlan& plan, Fn&& fn) {
  if constexpr (kHasPatternLoops<A> && kHasPatternLoops<B>) {
    withInnerSteps<2>(plan, fn);
  } else {
    fn(int(plan.innerContiguous(0)), int(plan.innerContiguous(1)));
  }
}

// out[i] = fn(a[i], b[i]) over the broadcast output; fn takes and returns compute types.
template <class A, class B, class Out, class Fn>
void broadcastBinary(const A* a, const B* b, Out* out, const BroadcastPlan& plan, int64_t grain, Fn fn) {
  withBinarySteps<A, B>(plan, [&](auto stepA, auto stepB) {
    parallelFor(plan.outputCount(), grain, [&](int64_t begin, int64_t end) {
      plan.forEachRun(begin, end, [&](int64_t outOffset, const int64_t* inOffsets, int64_t length) {
        const A* pa = a + inOffsets[0];
        const B* pb = b + inOffsets[1];
        Out* po = out + outOffset;
        if constexpr (!kIsHalfFloat<A> && !kIsHalfFloat<B> && !kIsHalfFloat<Out>) {
          for (int64_t i = 0; i < length; ++i) po[i] = fn(pa[i * stepA], pb[i * stepB]);
        } else {
          ComputeType<A> tileA[kHalfTile];
          ComputeType<B> tileB[kHalfTile];
          ComputeType<Out> tileOut[kHalfTile];
          for (int64_t start = 0; start < length; start += kHalfTile) {
            const int64_t count = std::min(kHalfTile, length - start);
            const auto* va = computeView(pa + start * stepA, stepA ? count : 1, tileA);
            const auto* vb = computeView(pb + start * stepB, stepB ? count : 1, tileB);
            auto* vo = kIsHalfFloat<Out> ? tileOut : reinterpret_cast<ComputeType<Out>*>(po + start);
            for (int64_t i = 0; i < count; ++i) vo[i] = fn(va[i * stepA], vb[i * stepB]);
            if constexpr (kIsHalfFloat<Out>) narrow(tileOut, po + start, count);
          }
        }
      });
    });
  });
}

}  // namespace kiln::kernels
