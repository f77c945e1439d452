// Runs the CUDA kernels on the host, for checking device code where there is no GPU (a developer
// tool, not part of the build): force-included ahead of every source, it takes over __global__,
// __device__ and __shared__; each block's threads are fibers (ucontext) run in turn, with
// __syncthreads, __syncwarp and __shfl_xor_sync as barriers; blocks run one after another, so
// static locals serve as shared memory. Slow (a fiber per thread) and blind to memory-model and
// timing bugs, but it runs the kernels' real index math, folds, scans and sorts. run.sh builds the
// GPU tests this way.
#pragma once
#define __host__
#define __device__
#define __global__
#define __shared__ static
#define __launch_bounds__(...)
#include <algorithm>
#include <cstdint>
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

inline void __syncthreads() { kiln_emu::wait(1); }
inline void __syncwarp(unsigned = 0xFFFFFFFFu) { kiln_emu::wait(2); }
// Atomics: the fibers of a launch run one at a time and switch only at a barrier, so a plain
// read-modify-write is atomic.
template <class T>
T atomicCAS(T* address, T compare, T value) {
  const T old = *address;
  if (old == compare) *address = value;
  return old;
}
template <class T, class U>
T atomicAdd(T* address, U value) {
  const T old = *address;
  *address = T(old + value);
  return old;
}
template <class T, class U>
T atomicMax(T* address, U value) {
  const T old = *address;
  if (T(value) > old) *address = T(value);
  return old;
}
template <class T, class U>
T atomicMin(T* address, U value) {
  const T old = *address;
  if (T(value) < old) *address = T(value);
  return old;
}

// Round-to-nearest double arithmetic (the host's default rounding).
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }

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
