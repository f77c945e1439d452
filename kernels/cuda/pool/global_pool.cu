#include "pool.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/vector_pack.cuh>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kChannelsPerBlock = 32, kSpatialSlices = 8;  // channels-last blocks
constexpr int64_t kBlockPerPlaneFrom = 1024;               // larger planes get a whole block each

// What the global pools accumulate: the value (max), the value (average) or |x|^p (Lp).
template <class Acc>
struct GlobalReduce {
  GlobalPoolKind kind;
  Acc p;
  int64_t spatial;

  __device__ Acc init() const { return kind == GlobalPoolKind::kMax ? std::numeric_limits<Acc>::lowest() : Acc(0); }
  __device__ Acc lift(Acc v) const { return kind == GlobalPoolKind::kLp ? pow(fabs(v), p) : v; }
  __device__ Acc combine(Acc a, Acc b) const { return kind == GlobalPoolKind::kMax ? (a < b ? b : a) : a + b; }
  __device__ Acc finish(Acc a) const {
    if (kind == GlobalPoolKind::kAverage) return a / Acc(spatial);
    if (kind == GlobalPoolKind::kLp) return pow(a, Acc(1) / p);
    return a;
  }
  __device__ Acc warpReduce(Acc a) const {
    for (int offset = kWarp / 2; offset > 0; offset /= 2) a = combine(a, __shfl_xor_sync(0xFFFFFFFFu, a, offset));
    return a;
  }
};

template <class T>
using GlobalAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
__device__ __forceinline__ T fromAcc(GlobalAcc<T> v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return fromCompute<T>(v);
}

// Channels-first, small planes: one warp per plane.
template <class T>
__global__ void planeWarpKernel(const T* __restrict__ x, T* __restrict__ y, int64_t planes,
                                GlobalReduce<GlobalAcc<T>> r) {
  const int lane = int(threadIdx.x) % kWarp;
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarp;
  // The loop bound is the same for a whole warp, so every lane reaches the shuffles.
  for (int64_t plane = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; plane < planes; plane += warps) {
    const T* in = x + plane * r.spatial;
    GlobalAcc<T> acc = r.init();
    for (int64_t i = lane; i < r.spatial; i += kWarp) acc = r.combine(acc, r.lift(GlobalAcc<T>(toCompute(in[i]))));
    acc = r.warpReduce(acc);
    if (lane == 0) y[plane] = fromAcc<T>(r.finish(acc));
  }
}

// Channels-first, large planes: one block per plane.
template <class T>
__global__ void planeBlockKernel(const T* __restrict__ x, T* __restrict__ y, int64_t planes,
                                 GlobalReduce<GlobalAcc<T>> r) {
  __shared__ GlobalAcc<T> partial[kThreadsPerBlock / kWarp];
  const int lane = int(threadIdx.x) % kWarp, warp = int(threadIdx.x) / kWarp;
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const T* in = x + plane * r.spatial;
    GlobalAcc<T> acc = r.init();
    for (int64_t i = threadIdx.x; i < r.spatial; i += blockDim.x)
      acc = r.combine(acc, r.lift(GlobalAcc<T>(toCompute(in[i]))));
    acc = r.warpReduce(acc);
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
      acc = lane < int(blockDim.x) / kWarp ? partial[lane] : r.init();
      acc = r.warpReduce(acc);
      if (lane == 0) y[plane] = fromAcc<T>(r.finish(acc));
    }
    __syncthreads();
  }
}

// Channels-last: threads along x take neighbouring channels (coalesced), along y slices of the
// spatial positions; the slices meet in shared memory.
template <class T>
__global__ void channelsLastKernel(const T* __restrict__ x, T* __restrict__ y, int64_t batch, int64_t channels,
                                   GlobalReduce<GlobalAcc<T>> r) {
  __shared__ GlobalAcc<T> partial[kSpatialSlices][kChannelsPerBlock + 1];
  for (int64_t n = blockIdx.y; n < batch; n += gridDim.y) {
    for (int64_t c0 = int64_t(blockIdx.x) * kChannelsPerBlock; c0 < channels;
         c0 += int64_t(gridDim.x) * kChannelsPerBlock) {
      const int64_t c = c0 + threadIdx.x;
      GlobalAcc<T> acc = r.init();
      if (c < channels)
        for (int64_t s = threadIdx.y; s < r.spatial; s += kSpatialSlices)
          acc = r.combine(acc, r.lift(GlobalAcc<T>(toCompute(x[(n * r.spatial + s) * channels + c]))));
      partial[threadIdx.y][threadIdx.x] = acc;
      __syncthreads();
      if (threadIdx.y == 0 && c < channels) {
        for (int slice = 1; slice < kSpatialSlices; ++slice) acc = r.combine(acc, partial[slice][threadIdx.x]);
        y[n * channels + c] = fromAcc<T>(r.finish(acc));
      }
      __syncthreads();
    }
  }
}

// Channels-last with whole 16-byte packs of V channels a pixel: a thread reads one pack per
// position (several loads in flight, unrolled), threads along x take neighbouring packs and along y
// slices of the positions; the slices meet in shared memory. The scalar kernel above reads 2-4
// bytes a thread and leaves the memory system mostly idle (EfficientNet's squeeze-and-excitation
// pools at batch 128 ran at a third of the bandwidth).
constexpr int kPackedThreads = 512;

// Blocks a launch should have to fill the GPU (four of 512 threads per SM of an H100 / H200);
// below that the positions of each image are split over several blocks, whose partial results meet
// in a second kernel (EfficientNet's squeeze-and-excitation pools at batch 1: one block of 512
// threads took 50 µs over a 112x112x32 map; at batch 128 its 128 blocks filled under a quarter).
constexpr int64_t kFillBlocks = 528;
constexpr int64_t kMinPositionsPerSplit = 256;

// Position splits per image for the packed kernel at these dims (1: none).
int64_t packedSplits(int64_t batch, int64_t channels, int64_t spatial, int v) {
  const int64_t groups = channels / v, tx = std::min<int64_t>(groups, kWarp);
  const int64_t blocks = (groups + tx - 1) / tx * batch;
  if (blocks * 2 >= kFillBlocks) return 1;
  const int64_t most = std::min<int64_t>(65535, spatial / kMinPositionsPerSplit);
  return most <= 1 ? 1 : std::min<int64_t>((kFillBlocks + blocks - 1) / blocks, most);
}

template <class T, int V>
__global__ void __launch_bounds__(kPackedThreads)
    channelsLastPackedKernel(const T* __restrict__ x, T* __restrict__ y, int64_t channels, GlobalReduce<GlobalAcc<T>> r,
                             GlobalAcc<T>* __restrict__ partials, int64_t batch) {
  using Acc = GlobalAcc<T>;
  __shared__ Acc partial[kPackedThreads * V];
  const int64_t groups = channels / V, n = blockIdx.y;
  const int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  // Split blockIdx.z of gridDim.z takes positions [begin, end).
  const int64_t chunk = (r.spatial + gridDim.z - 1) / gridDim.z;
  const int64_t begin = int64_t(blockIdx.z) * chunk, end = begin + chunk < r.spatial ? begin + chunk : r.spatial;
  Acc acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = r.init();
  if (g < groups) {
    const T* base = x + n * r.spatial * channels + g * V;
    // kInFlight positions' loads issued before any is added (a runtime-bounded loop's unrolling
    // left them one after another: 1.4 TB/s on EfficientNet's pools at batch 128).
    constexpr int kInFlight = 4;
    const int64_t step = blockDim.y;
    for (int64_t s = begin + threadIdx.y; s < end; s += kInFlight * step) {
      Pack<T, V> in[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (s + u * step < end) in[u] = loadPack<T, V>(base + (s + u * step) * channels, 0);
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (s + u * step < end)
#pragma unroll
          for (int v = 0; v < V; ++v) acc[v] = r.combine(acc[v], r.lift(Acc(toCompute(in[u].v[v]))));
    }
  }
  Acc* mine = partial + (threadIdx.y * blockDim.x + threadIdx.x) * V;
#pragma unroll
  for (int v = 0; v < V; ++v) mine[v] = acc[v];
  __syncthreads();
  if (threadIdx.y != 0 || g >= groups) return;
  for (unsigned slice = 1; slice < blockDim.y; ++slice) {
    const Acc* other = partial + (slice * blockDim.x + threadIdx.x) * V;
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = r.combine(acc[v], other[v]);
  }
  if (partials) {  // this split's result, finished by splitsFinishKernel
    Acc* out = partials + (int64_t(blockIdx.z) * batch + n) * channels + g * V;
#pragma unroll
    for (int v = 0; v < V; ++v) out[v] = acc[v];
    return;
  }
  Pack<T, V> out;
#pragma unroll
  for (int v = 0; v < V; ++v) out.v[v] = fromAcc<T>(r.finish(acc[v]));
  *reinterpret_cast<Pack<T, V>*>(y + n * channels + g * V) = out;
}

// y[i] = finish(combine over the splits of partials[split][i]), i over batch · channels.
template <class T>
__global__ void splitsFinishKernel(const GlobalAcc<T>* __restrict__ partials, T* __restrict__ y, int64_t count,
                                   int64_t splits, GlobalReduce<GlobalAcc<T>> r) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    GlobalAcc<T> acc = r.init();
    for (int64_t split = 0; split < splits; ++split) acc = r.combine(acc, partials[split * count + i]);
    y[i] = fromAcc<T>(r.finish(acc));
  }
}

// The packed kernel over `splits` position splits: finished into y, or (partials) left as sums.
template <class T, int V>
void launchPacked(const T* x, T* y, int64_t batch, int64_t channels, const GlobalReduce<GlobalAcc<T>>& r,
                  GlobalAcc<T>* partials, int64_t splits, cudaStream_t stream) {
  const int64_t groups = channels / V;
  const unsigned tx = unsigned(std::min<int64_t>(groups, kWarp));
  const dim3 grid(unsigned((groups + tx - 1) / tx), unsigned(batch), unsigned(splits));
  channelsLastPackedKernel<T, V>
      <<<grid, dim3(tx, kPackedThreads / tx), 0, stream>>>(x, y, channels, r, partials, batch);
}

template <class T>
bool launchPackedChannelsLast(const T* x, T* y, int64_t batch, int64_t channels, const GlobalReduce<GlobalAcc<T>>& r,
                              void* workspace, uint64_t workspaceBytes, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    constexpr int V = 16 / int(sizeof(T));
    const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (channels % V != 0 || !aligned(x) || !aligned(y) || batch > 65535) return false;
    int64_t splits = packedSplits(batch, channels, r.spatial, V);
    if (workspaceBytes < uint64_t(splits * batch * channels) * sizeof(GlobalAcc<T>)) splits = 1;
    auto* partials = splits > 1 ? static_cast<GlobalAcc<T>*>(workspace) : nullptr;
    launchPacked<T, V>(x, y, batch, channels, r, partials, splits, stream);
    if (partials)
      splitsFinishKernel<T>
          <<<gridFor(batch * channels), kThreadsPerBlock, 0, stream>>>(partials, y, batch * channels, splits, r);
    return true;
  }
}

}  // namespace

int64_t globalSumSplits(int64_t batch, int64_t channels, int64_t spatial, ElementType type) {
  if (type != ElementType::kFloat32 && type != ElementType::kFloat16 && type != ElementType::kBFloat16) return 0;
  const int v = 16 / int(elementBytes(type));
  if (batch < 1 || channels < 1 || spatial < 1 || channels % v != 0 || batch > 65535) return 0;
  return packedSplits(batch, channels, spatial, v);
}

cudaError_t globalSumPartials(const void* x, float* partials, int64_t batch, int64_t channels, int64_t spatial,
                              int64_t splits, ElementType type, cudaStream_t stream) {
  if (splits < 1 || splits > 65535 || splits != globalSumSplits(batch, channels, spatial, type) ||
      reinterpret_cast<uintptr_t>(x) % 16 != 0)
    return cudaErrorInvalidValue;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) {
      return cudaErrorInvalidValue;
    } else {
      const GlobalReduce<float> r{GlobalPoolKind::kAverage, 0.0f, spatial};
      launchPacked<T, 16 / int(sizeof(T))>(static_cast<const T*>(x), nullptr, batch, channels, r, partials, splits,
                                           stream);
      return launchStatus();
    }
  });
}

uint64_t globalPoolWorkspaceBytes(int64_t batch, int64_t channels, int64_t spatial, PoolLayout layout,
                                  ElementType type) {
  if (layout != PoolLayout::kChannelsLast) return 0;
  const int64_t splits = globalSumSplits(batch, channels, spatial, type);
  return splits > 1 ? uint64_t(splits * batch * channels) * sizeof(float) : 0;
}

cudaError_t globalPool(GlobalPoolKind kind, const void* x, void* y, int64_t batch, int64_t channels, int64_t spatial,
                       float p, PoolLayout layout, ElementType type, cudaStream_t stream, void* workspace,
                       uint64_t workspaceBytes) {
  if (batch < 0 || channels < 0 || spatial < 0 || (kind == GlobalPoolKind::kLp && !(p > 0)))
    return cudaErrorInvalidValue;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    using Acc = GlobalAcc<T>;
    const int64_t planes = batch * channels;
    if (planes == 0) return cudaSuccess;
    const GlobalReduce<Acc> r{kind, Acc(p), spatial};
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    if (layout == PoolLayout::kChannelsLast &&
        launchPackedChannelsLast<T>(in, out, batch, channels, r, workspace, workspaceBytes, stream)) {
      return launchStatus();
    } else if (layout == PoolLayout::kChannelsLast) {
      const dim3 grid(unsigned(std::min<int64_t>((channels + kChannelsPerBlock - 1) / kChannelsPerBlock, 65535)),
                      unsigned(std::min<int64_t>(batch, 65535)));
      channelsLastKernel<T><<<grid, dim3(kChannelsPerBlock, kSpatialSlices), 0, stream>>>(in, out, batch, channels, r);
    } else if (spatial >= kBlockPerPlaneFrom) {
      planeBlockKernel<T>
          <<<unsigned(std::min<int64_t>(planes, 65535 * 8)), kThreadsPerBlock, 0, stream>>>(in, out, planes, r);
    } else {
      planeWarpKernel<T><<<gridFor(planes * kWarp), kThreadsPerBlock, 0, stream>>>(in, out, planes, r);
    }
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
