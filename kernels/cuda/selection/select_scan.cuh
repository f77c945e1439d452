#pragma once
// The ordered selection the data-dependent ops share, without atomics (so positions come out in
// input order, as the CPU kernels give them): items [0, n) are split into at most kMaxSelectBlocks
// contiguous chunks; a counting launch folds each chunk's kept items, one block scans the chunk
// counts into offsets (and the total), and a writing launch scans each chunk again, calling
// write(i, rank, kept) for every item with rank = the kept items before i. Also a stable merge
// sort of int64 keys by any strict weak order.
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/reduce/block_reduce.cuh>

#include <cstdint>

namespace kiln::kernels::cuda {

constexpr int kSelectThreads = 256;
constexpr int64_t kMaxSelectBlocks = 1024;

struct SelectGrid {
  int64_t chunk = kSelectThreads;  // items per block, a multiple of kSelectThreads
  int64_t blocks = 1;
};

inline SelectGrid selectGrid(int64_t n) {
  SelectGrid g;
  const int64_t perBlock = (n + kMaxSelectBlocks - 1) / kMaxSelectBlocks;
  g.chunk = std::max<int64_t>(kSelectThreads, (perBlock + kSelectThreads - 1) / kSelectThreads * kSelectThreads);
  g.blocks = std::max<int64_t>(1, (n + g.chunk - 1) / g.chunk);
  return g;
}

// Chunk counts and offsets, then the total.
inline size_t selectScratchBytes(int64_t n) { return size_t(2 * selectGrid(n).blocks + 1) * sizeof(int64_t); }

struct SelectScratch {
  int64_t* counts;
  int64_t* offsets;
  int64_t* total;
  explicit SelectScratch(void* memory, int64_t n) {
    counts = static_cast<int64_t*>(memory);
    offsets = counts + selectGrid(n).blocks;
    total = offsets + selectGrid(n).blocks;
  }
};

struct AddInt64 {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a + b; }
};

// Exclusive prefix sum of one value per thread of the block; *blockTotal gets the sum. `shared`
// holds one slot per thread. Every thread must call.
__device__ inline int64_t blockExclusiveScan(int64_t value, int64_t* shared, int64_t* blockTotal) {
  const int t = int(threadIdx.x), threads = int(blockDim.x);
  shared[t] = value;
  __syncthreads();
  for (int step = 1; step < threads; step *= 2) {  // Hillis-Steele: inclusive sums
    const int64_t add = t >= step ? shared[t - step] : 0;
    __syncthreads();
    shared[t] += add;
    __syncthreads();
  }
  const int64_t inclusive = shared[t];
  *blockTotal = shared[threads - 1];
  __syncthreads();
  return inclusive - value;
}

template <class Keep>
__global__ void __launch_bounds__(kSelectThreads) countKept(int64_t n, int64_t chunk, Keep keep, int64_t* counts) {
  __shared__ int64_t shared[kSelectThreads];
  const int64_t begin = int64_t(blockIdx.x) * chunk, end = std::min<int64_t>(n, begin + chunk);
  int64_t mine = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) mine += keep(i) ? 1 : 0;
  const int64_t sum = blockFold(mine, shared, AddInt64{});
  if (threadIdx.x == 0) counts[blockIdx.x] = sum;
}

// One block: offsets[b] = counts[0] + ... + counts[b-1]; *total = the sum of all.
static __global__ void __launch_bounds__(kSelectThreads) scanCounts(const int64_t* counts, int64_t m, int64_t* offsets,
                                                             int64_t* total) {
  __shared__ int64_t shared[kSelectThreads];
  int64_t carry = 0;
  for (int64_t base = 0; base < m; base += blockDim.x) {
    const int64_t i = base + threadIdx.x;
    int64_t tileTotal = 0;
    const int64_t before = blockExclusiveScan(i < m ? counts[i] : 0, shared, &tileTotal);
    if (i < m) offsets[i] = carry + before;
    carry += tileTotal;
  }
  if (threadIdx.x == 0) *total = carry;
}

template <class Keep, class Write>
__global__ void __launch_bounds__(kSelectThreads) writeKept(int64_t n, int64_t chunk, Keep keep,
                                                            const int64_t* offsets, Write write) {
  __shared__ int64_t shared[kSelectThreads];
  const int64_t begin = int64_t(blockIdx.x) * chunk, end = std::min<int64_t>(n, begin + chunk);
  int64_t carry = offsets[blockIdx.x];
  for (int64_t base = begin; base < end; base += blockDim.x) {
    const int64_t i = base + threadIdx.x;
    const bool kept = i < end && keep(i);
    int64_t tileTotal = 0;
    const int64_t before = blockExclusiveScan(kept ? 1 : 0, shared, &tileTotal);
    if (i < end) write(i, carry + before, kept);
    carry += tileTotal;
  }
}

// Counts the kept items into scratch (offsets and *total on the device).
template <class Keep>
cudaError_t launchCount(int64_t n, Keep keep, const SelectScratch& scratch, cudaStream_t stream) {
  const SelectGrid g = selectGrid(n);
  countKept<<<unsigned(g.blocks), kSelectThreads, 0, stream>>>(n, g.chunk, keep, scratch.counts);
  scanCounts<<<1, kSelectThreads, 0, stream>>>(scratch.counts, g.blocks, scratch.offsets, scratch.total);
  return launchStatus();
}

// After launchCount with the same keep.
template <class Keep, class Write>
cudaError_t launchWrite(int64_t n, Keep keep, Write write, const SelectScratch& scratch, cudaStream_t stream) {
  const SelectGrid g = selectGrid(n);
  writeKept<<<unsigned(g.blocks), kSelectThreads, 0, stream>>>(n, g.chunk, keep, scratch.offsets, write);
  return launchStatus();
}

static __global__ void fillIota(int64_t* keys, int64_t n) {
  KILN_GRID_STRIDE_LOOP(i, n) keys[i] = i;
}

// One pass of a bottom-up merge sort: runs of `width` sorted keys in `in` merge pairwise into
// `out`. Each key finds its place by a binary search in the other run; ties keep the left run's
// keys first, so the sort is stable.
template <class Less>
__global__ void mergePass(const int64_t* in, int64_t* out, int64_t n, int64_t width, Less less) {
  KILN_GRID_STRIDE_LOOP(i, n) {
    const int64_t lo = i / (2 * width) * (2 * width), mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
    const int64_t key = in[i];
    int64_t first, last;
    if (i < mid) {  // right keys strictly before it
      first = mid, last = hi;
      while (first < last) {
        const int64_t m = first + (last - first) / 2;
        if (less(in[m], key)) first = m + 1;
        else last = m;
      }
      out[lo + (i - lo) + (first - mid)] = key;
    } else {  // left keys not after it
      first = lo, last = mid;
      while (first < last) {
        const int64_t m = first + (last - first) / 2;
        if (!less(key, in[m])) first = m + 1;
        else last = m;
      }
      out[lo + (i - mid) + (first - lo)] = key;
    }
  }
}

// Sorts the keys 0..n-1 by `less`, stably; `a` and `b` hold n keys each. Returns the buffer that
// holds the result.
template <class Less>
int64_t* stableSortIndices(int64_t n, Less less, int64_t* a, int64_t* b, cudaStream_t stream) {
  fillIota<<<gridFor(n), kThreadsPerBlock, 0, stream>>>(a, n);
  for (int64_t width = 1; width < n; width *= 2) {
    mergePass<<<gridFor(n), kThreadsPerBlock, 0, stream>>>(a, b, n, width, less);
    std::swap(a, b);
  }
  return a;
}

}  // namespace kiln::kernels::cuda
