// Runs the CUDA kernels on the host, for checking device code where there is no GPU (a developer
// tool, not part of the build): force-included ahead of every source, it takes over __global__,
// __device__ and __shared__; each block's threads are fibers (ucontext) run in turn, with
// __syncthreads, __syncwarp and __shfl_xor_sync as barriers; blocks run one after another, so
// static locals serve as shared memory. Slow (a fiber per thread) and blind to memory-model and
// timing bugs, but it runs the kernels' real index math, folds, scans and sorts. run.sh builds the
// GPU tests this way.
#pragma once
#define KILN_CUDA_EMULATION 1  // device-only helpers that kernels guard with __CUDACC__ compile too
#define __host__
#define __device__
#define __global__
#define __shared__ static
#define __launch_bounds__(...)
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <ucontext.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

namespace kiln_emu {
struct Fiber {
  ucontext_t context;
  bool done = false;
  int waiting = 0;  // 1: block barrier, 2: warp barrier
  uint3 tid;
};
inline std::vector<Fiber> fibers;
inline std::vector<std::vector<char>> stacks;
inline int current = -1;
inline ucontext_t scheduler;
inline std::function<void()> body;
inline std::vector<unsigned char> dynamicSharedBytes;
inline uint64_t slots[1024];
inline long long launches = 0;

inline void* dynamicShared() { return dynamicSharedBytes.data(); }

inline void entry() {
  body();
  fibers[size_t(current)].done = true;
  swapcontext(&fibers[size_t(current)].context, &scheduler);
}

inline void wait(int kind) {
  fibers[size_t(current)].waiting = kind;
  swapcontext(&fibers[size_t(current)].context, &scheduler);
}

inline int linearId() { return int(threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y); }

template <class F>
void launch(F kernel, dim3 grid, dim3 block, size_t sharedBytes = 0, cudaStream_t = nullptr) {
  ++launches;
  const int threads = int(block.x * block.y * block.z);
  if (threads > 1024 || threads < 1) { std::fprintf(stderr, "bad block size %d\n", threads); std::abort(); }
  body = kernel;
  dynamicSharedBytes.assign(sharedBytes, 0xAB);
  constexpr size_t kStack = 64 * 1024;
  while (stacks.size() < size_t(threads)) stacks.emplace_back(kStack);
  gridDim = grid;
  blockDim = block;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = {bx, by, bz};
        fibers.assign(size_t(threads), Fiber{});
        for (int t = 0; t < threads; ++t) {
          Fiber& f = fibers[size_t(t)];
          f.tid = {unsigned(t % block.x), unsigned((t / block.x) % block.y), unsigned(t / (block.x * block.y))};
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = stacks[size_t(t)].data();
          f.context.uc_stack.ss_size = kStack;
          f.context.uc_link = nullptr;
          makecontext(&f.context, entry, 0);
        }
        for (;;) {
          bool ran = false, live = false;
          for (int t = 0; t < threads; ++t) {
            Fiber& f = fibers[size_t(t)];
            if (f.done) continue;
            live = true;
            if (f.waiting) continue;
            current = t;
            threadIdx = f.tid;
            swapcontext(&scheduler, &f.context);
            ran = true;
          }
          if (!live) break;
          // Release a block barrier when every live thread waits at one; a warp barrier per warp.
          bool allAtBlock = true;
          for (const Fiber& f : fibers) allAtBlock = allAtBlock && (f.done || f.waiting == 1);
          if (allAtBlock) {
            for (Fiber& f : fibers) f.waiting = 0;
            continue;
          }
          bool released = false;
          for (int w = 0; w * 32 < threads; ++w) {
            bool all = true, any = false;
            for (int t = w * 32; t < std::min(threads, w * 32 + 32); ++t) {
              const Fiber& f = fibers[size_t(t)];
              if (f.done) continue;
              any = true;
              all = all && f.waiting == 2;
            }
            if (any && all) {
              for (int t = w * 32; t < std::min(threads, w * 32 + 32); ++t) fibers[size_t(t)].waiting = 0;
              released = true;
            }
          }
          if (!ran && !released) {
            std::fprintf(stderr, "deadlock: threads wait at different barriers (block %u,%u)\n", bx, by);
            std::abort();
          }
        }
      }
}
}  // namespace kiln_emu

// The device's correctly rounded arithmetic intrinsics: plain host arithmetic (x86-64 builds do
// not contract into fused multiply-adds by default).
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }

inline void __syncthreads() { kiln_emu::wait(1); }
inline void __syncwarp(unsigned = 0xFFFFFFFFu) { kiln_emu::wait(2); }

template <class T>
T __shfl_xor_sync(unsigned, T value, int laneMask, int = 32) {
  static_assert(sizeof(T) <= 8);
  const int me = kiln_emu::linearId();
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  kiln_emu::slots[me] = bits;
  kiln_emu::wait(2);
  const int partner = (me & ~31) | ((me & 31) ^ laneMask);
  std::memcpy(&value, &kiln_emu::slots[partner], sizeof(T));
  kiln_emu::wait(2);
  return value;
}

// Fibers switch only at barriers, so a plain read-modify-write is atomic here.
template <class T, class U>
T atomicAdd(T* address, U value) {
  const T old = *address;
  *address = T(old + value);
  return old;
}
template <class T, class U>
T atomicMax(T* address, U value) {
  const T old = *address;
  *address = old < T(value) ? T(value) : old;
  return old;
}
template <class T, class U>
T atomicMin(T* address, U value) {
  const T old = *address;
  *address = T(value) < old ? T(value) : old;
  return old;
}
template <class T, class U, class V>
T atomicCAS(T* address, U compare, V value) {
  const T old = *address;
  if (old == T(compare)) *address = T(value);
  return old;
}
template <class T, class U>
T atomicExch(T* address, U value) {
  const T old = *address;
  *address = T(value);
  return old;
}

// Warp-wide matrix instructions as PTX lays them out (flash attention's ldmatrix and mma.sync):
// every lane posts its operands, the warp meets, each lane takes its own part, the warp meets again.
namespace kiln_emu {
inline uint32_t operandSlots[1024][6];

// ldmatrix.x4 (.trans): lane l gives the address of row l % 8 of matrix l / 8; r[i] receives of
// matrix i the pair at row l / 4, columns 2 (l % 4) and + 1 (transposed: rows 2 (l % 4) and + 1 of
// column l / 4).
inline void loadMatrices(uint32_t (&r)[4], const uint16_t* row, bool transposed) {
  const int me = linearId(), l = me & 31, base = me & ~31;
  std::memcpy(&slots[me], &row, sizeof row);
  wait(2);
  for (int m = 0; m < 4; ++m) {
    auto at = [&](int i, int j) {
      const uint16_t* start;
      std::memcpy(&start, &slots[base + m * 8 + i], sizeof start);
      return uint32_t(start[j]);
    };
    const int i = l / 4, j = 2 * (l % 4);
    r[m] = transposed ? at(j, i) | at(j + 1, i) << 16 : at(i, j) | at(i, j + 1) << 16;
  }
  wait(2);
}

inline float wideOf(uint16_t bits, bool bfloat16) {
  if (bfloat16) {
    const uint32_t word = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &word, sizeof f);
    return f;
  }
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

// The warp-wide product every mma.sync shape shares: each lane posts its operands, the warp meets,
// each lane adds to its accumulator elements (rows l / 4 and l / 4 + 8, columns 2 (l % 4) and + 1)
// the sum over k of aAt(row, k) · bAt(k, column), read from the posted operands of the warp's lanes
// (base: the warp's first lane), and the warp meets again.
template <class Acc, class AAt, class BAt>
inline void warpProduct(Acc (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, int k, AAt aAt, BAt bAt) {
  const int me = linearId(), l = me & 31, base = me & ~31;
  for (int i = 0; i < 4; ++i) operandSlots[me][i] = a[i];
  operandSlots[me][4] = b0;
  operandSlots[me][5] = b1;
  wait(2);
  Acc out[4];
  for (int e = 0; e < 4; ++e) {
    const int row = l / 4 + (e >= 2 ? 8 : 0), column = 2 * (l % 4) + (e & 1);
    Acc sum = c[e];
    for (int kk = 0; kk < k; ++kk) sum += aAt(base, row, kk) * bAt(base, kk, column);
    out[e] = sum;
  }
  wait(2);
  for (int e = 0; e < 4; ++e) c[e] = out[e];
}

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.f32: c (16x8) += a (16x16) · b (16x8). Lane
// 4g + t holds of a the pairs (row g, columns 2t, 2t+1), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8),
// of b (rows 2t, 2t + 1, column g) and (rows 2t + 8, 2t + 9), of c rows g, g + 8 at columns 2t, 2t + 1.
inline void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, bool bfloat16) {
  auto element = [&](int lane, int reg, int k) {
    return wideOf(uint16_t(operandSlots[lane][reg] >> (16 * (k % 2))), bfloat16);
  };
  warpProduct(
      c, a, b0, b1, 16,
      [&](int base, int row, int k) { return element(base + row % 8 * 4 + k % 8 / 2, (row >= 8) + 2 * (k >= 8), k); },
      [&](int base, int k, int n) { return element(base + n * 4 + k % 8 / 2, 4 + (k >= 8), k); });
}
// cvt.rna.tf32.f32: the float's top 19 bits, rounded to nearest with ties away from zero.
inline uint32_t tf32Of(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7F800000u) != 0x7F800000u) bits += 0x1000u;  // inf and NaN stay as they are
  return bits & 0xFFFFE000u;
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: c (16x8) += a (16x8) · b (8x8), the
// operands' low 13 bits ignored. Lane 4g + t holds of a (row g, k t), (g + 8, t), (g, t + 4),
// (g + 8, t + 4); of b (k t, column g) and (k t + 4, column g); of c rows g, g + 8 at columns 2t, 2t + 1.
inline void mma1688Tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  auto element = [&](int lane, int reg) {
    const uint32_t bits = operandSlots[lane][reg] & 0xFFFFE000u;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  };
  warpProduct(
      c, a, b0, b1, 8,
      [&](int base, int row, int k) { return element(base + row % 8 * 4 + k % 4, (row >= 8) + 2 * (k >= 4)); },
      [&](int base, int k, int n) { return element(base + n * 4 + k % 4, 4 + (k >= 4)); });
}

// e4m3fn code -> float (sign, 4 exponent bits of bias 7, 3 mantissa bits; 0x7F / 0xFF NaN).
inline float e4m3Value(uint8_t code) {
  const int exponent = (code >> 3) & 15, mantissa = code & 7;
  float magnitude = exponent == 0 ? std::ldexp(float(mantissa), -9) : std::ldexp(float(8 + mantissa), exponent - 10);
  if ((code & 0x7F) == 0x7F) magnitude = __builtin_nanf("");
  return code & 0x80 ? -magnitude : magnitude;
}

// mma.sync.aligned.m16n8k32.row.col.{s32.s8.s8.s32 | f32.e4m3.e4m3.f32}: c (16x8) += a (16x32) ·
// b (32x8), 8-bit operands four to a register, the lowest k in the lowest byte. Lane 4g + t holds
// of a (row g, k 4t..4t+3), (g + 8, 4t..), (g, 16 + 4t..), (g + 8, 16 + 4t..); of b (k 4t..4t+3,
// column g) and (k 16 + 4t.., column g); of c rows g, g + 8 at columns 2t, 2t + 1 (the PTX ISA's
// fragment tables for .s8 / .e4m3 at m16n8k32).
template <class Acc>
inline void mma16832(Acc (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  auto byteOf = [&](int lane, int reg, int k) { return uint8_t(operandSlots[lane][reg] >> (8 * (k % 4))); };
  auto value = [](uint8_t code) {
    if constexpr (std::is_integral_v<Acc>)  // s32: s8 x s8
      return Acc(int8_t(code));
    else
      return e4m3Value(code);
  };
  warpProduct(
      c, a, b0, b1, 32,
      [&](int base, int row, int k) {
        return value(byteOf(base + row % 8 * 4 + k % 16 / 4, (row >= 8) + 2 * (k >= 16), k));
      },
      [&](int base, int k, int n) { return value(byteOf(base + n * 4 + k % 16 / 4, 4 + (k >= 16), k)); });
}
}  // namespace kiln_emu
