#pragma once
// Atomic read-modify-write of any numeric element for the scatter reductions: the hardware's own
// atomics where they exist (float / double add, 32- and 64-bit integer add, max, min), otherwise
// a compare-and-swap loop on the element (16, 32 or 64 bits), or for 1-byte elements on the
// aligned 32-bit word around it (its other bytes written back unchanged; the word may reach up to
// 3 bytes past the tensor, which Kiln's 256-byte-aligned allocations always hold).
#include "scatter.h"

#include <kernels/cuda/common/device_types.cuh>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace kiln::kernels::cuda {

// The CPU kernel's reduce(): integers wrap, half / bfloat16 compute in float and round once,
// max / min keep the first operand on ties and NaN as std::max / std::min do.
template <class T>
__device__ __forceinline__ T combineValues(T a, T b, ScatterReduction op) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return fromCompute<T>(combineValues(toCompute(a), toCompute(b), op));
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case ScatterReduction::kAdd: return a + b;
      case ScatterReduction::kMul: return a * b;
      case ScatterReduction::kMax: return a < b ? b : a;
      case ScatterReduction::kMin: return b < a ? b : a;
      default: return b;
    }
  } else {  // unsigned 64-bit arithmetic wraps like the narrower types, without signed overflow
    switch (op) {
      case ScatterReduction::kAdd: return T(uint64_t(a) + uint64_t(b));
      case ScatterReduction::kMul: return T(uint64_t(a) * uint64_t(b));
      case ScatterReduction::kMax: return a < b ? b : a;
      case ScatterReduction::kMin: return b < a ? b : a;
      default: return b;
    }
  }
}

template <class To, class From>
__device__ __forceinline__ To bitCast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

template <class T>
__device__ void atomicCombineByCas(T* address, T value, ScatterReduction op) {
  if constexpr (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
    // 16-bit atomicCAS exists from sm_70 on (Kiln builds for sm_80 and newer): no neighbour bytes.
    using Word = std::conditional_t<sizeof(T) == 2, unsigned short int,
                                    std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>>;
    Word* word = reinterpret_cast<Word*>(address);
    Word old = *word, assumed;
    do {
      assumed = old;
      old = atomicCAS(word, assumed, bitCast<Word>(combineValues(bitCast<T>(assumed), value, op)));
    } while (old != assumed);
  } else {  // bytes: a CAS on the aligned 32-bit word around it, the other bytes written back as they were
    // (so the buffer must extend to a multiple of 4 bytes; the engine's arena rounds to 256)
    using Narrow = uint8_t;
    const uintptr_t at = reinterpret_cast<uintptr_t>(address);
    unsigned int* word = reinterpret_cast<unsigned int*>(at & ~uintptr_t(3));
    const unsigned int shift = unsigned(at & 3) * 8, mask = 0xFFu << shift;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const T current = bitCast<T>(Narrow((assumed & mask) >> shift));
      const unsigned int next = unsigned(bitCast<Narrow>(combineValues(current, value, op))) << shift;
      old = atomicCAS(word, assumed, (assumed & ~mask) | next);
    } while (old != assumed);
  }
}

template <class T>
__device__ __forceinline__ void atomicCombine(T* address, T value, ScatterReduction op) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (op == ScatterReduction::kAdd) return void(atomicAdd(address, value));
  } else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>) {
    if (op == ScatterReduction::kAdd) return void(atomicAdd(address, value));
    if (op == ScatterReduction::kMax) return void(atomicMax(address, value));
    if (op == ScatterReduction::kMin) return void(atomicMin(address, value));
  } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
    using Native = std::conditional_t<std::is_same_v<T, int64_t>, long long, unsigned long long>;
    Native* native = reinterpret_cast<Native*>(address);
    if (op == ScatterReduction::kAdd)
      return void(atomicAdd(reinterpret_cast<unsigned long long*>(address), (unsigned long long)value));
    if (op == ScatterReduction::kMax) return void(atomicMax(native, Native(value)));
    if (op == ScatterReduction::kMin) return void(atomicMin(native, Native(value)));
  }
  atomicCombineByCas(address, value, op);
}

}  // namespace kiln::kernels::cuda
