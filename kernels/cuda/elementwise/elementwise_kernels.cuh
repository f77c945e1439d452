#pragma once
// The loops the elementwise launch functions share: out = f(inputs) over a BroadcastPlan. A simple
// plan (inputs dense or one repeated element) runs over plain pointers in 16-byte packs where every
// dense pointer is aligned (a scalar loop takes the rest); any other plan computes each input's
// offset with the BroadcastIndexer. f takes and returns compute types (device_types.cuh); inputs
// and outputs are storage types (bool as uint8_t).
#include "broadcast_indexer.h"
#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/common/vector_pack.cuh"

#include <algorithm>
#include <cstdint>

namespace kiln::kernels::cuda {

// Elements per pack: 16 bytes of the widest type.
template <class... T>
constexpr int packWidth() {
  constexpr size_t widest = std::max({sizeof(T)...});
  return widest >= 16 ? 1 : int(16 / widest);
}

template <class Out, class V>
__device__ __forceinline__ Out storeAs(V v) {
  return fromCompute<Out>(static_cast<ComputeType<Out>>(v));
}

// ---- one input, dense ----
template <int W, class In, class Out, class F>
__global__ void mapDenseKernel(const In* in, Out* out, int64_t n, bool packed, F f) {
  const int64_t packs = packed ? n / W : 0;
  KILN_GRID_STRIDE_LOOP(p, packs) {
    const Pack<In, W> x = reinterpret_cast<const Pack<In, W>*>(in)[p];
    Pack<Out, W> y;
#pragma unroll
    for (int k = 0; k < W; ++k) y.v[k] = storeAs<Out>(f(toCompute(x.v[k])));
    reinterpret_cast<Pack<Out, W>*>(out)[p] = y;
  }
  for (int64_t i = packs * W + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = storeAs<Out>(f(toCompute(in[i])));
}

template <class In, class Out, class F>
cudaError_t mapDense(const In* in, Out* out, int64_t n, F f, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int W = packWidth<In, Out>();
  const bool packed = alignedTo(in, sizeof(In) * W) && alignedTo(out, sizeof(Out) * W);
  mapDenseKernel<W><<<gridFor(packed ? n / W + 1 : n), kThreadsPerBlock, 0, stream>>>(in, out, n, packed, f);
  return launchStatus();
}

// ---- two inputs, broadcast ----
template <int W, class A, class B, class Out, class F>
__global__ void mapPairSimpleKernel(const A* a, const B* b, Out* out, int64_t n, bool aOne, bool bOne, bool packed,
                                    F f) {
  const ComputeType<A> a0 = toCompute(a[0]);
  const ComputeType<B> b0 = toCompute(b[0]);
  const int64_t packs = packed ? n / W : 0;
  KILN_GRID_STRIDE_LOOP(p, packs) {
    Pack<A, W> x;
    Pack<B, W> y;
    if (!aOne) x = reinterpret_cast<const Pack<A, W>*>(a)[p];
    if (!bOne) y = reinterpret_cast<const Pack<B, W>*>(b)[p];
    Pack<Out, W> z;
#pragma unroll
    for (int k = 0; k < W; ++k) z.v[k] = storeAs<Out>(f(aOne ? a0 : toCompute(x.v[k]), bOne ? b0 : toCompute(y.v[k])));
    reinterpret_cast<Pack<Out, W>*>(out)[p] = z;
  }
  for (int64_t i = packs * W + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = storeAs<Out>(f(aOne ? a0 : toCompute(a[i]), bOne ? b0 : toCompute(b[i])));
}

template <class A, class B, class Out, class F>
__global__ void mapPairIndexedKernel(const A* a, const B* b, Out* out, int64_t n,
                                     const __grid_constant__ BroadcastIndexer<2> indexer, F f) {
  KILN_GRID_STRIDE_LOOP(i, n) {
    int64_t offsets[2];
    indexer.offsets(i, offsets);
    out[i] = storeAs<Out>(f(toCompute(a[offsets[0]]), toCompute(b[offsets[1]])));
  }
}

// W outputs a thread where the innermost (coalesced) dim holds whole packs and each input is dense
// (stride 1) or repeated (stride 0) along it: one offset computation per pack, 16-byte loads of the
// dense inputs. A per-channel scale on a channels-last map ([N, HW, C] times [N, 1, C]) is this case.
template <int W, class A, class B, class Out, class F>
__global__ void mapPairIndexedPackedKernel(const A* a, const B* b, Out* out, int64_t packs,
                                           const __grid_constant__ BroadcastIndexer<2> indexer, bool aDense,
                                           bool bDense, F f) {
  KILN_GRID_STRIDE_LOOP(p, packs) {
    int64_t offsets[2];
    indexer.offsets(p * W, offsets);
    Pack<A, W> x;
    Pack<B, W> y;
    if (aDense) {
      x = *reinterpret_cast<const Pack<A, W>*>(a + offsets[0]);
    } else {
#pragma unroll
      for (int k = 0; k < W; ++k) x.v[k] = a[offsets[0]];
    }
    if (bDense) {
      y = *reinterpret_cast<const Pack<B, W>*>(b + offsets[1]);
    } else {
#pragma unroll
      for (int k = 0; k < W; ++k) y.v[k] = b[offsets[1]];
    }
    Pack<Out, W> z;
#pragma unroll
    for (int k = 0; k < W; ++k) z.v[k] = storeAs<Out>(f(toCompute(x.v[k]), toCompute(y.v[k])));
    reinterpret_cast<Pack<Out, W>*>(out)[p] = z;
  }
}

// Whether input k of an indexed plan can be read a pack of W at a time (see the kernel above).
template <int Inputs>
bool packsAlongInnerDim(const BroadcastPlan<Inputs>& plan, int k, const void* data, size_t bytes, int w) {
  const BroadcastIndexer<Inputs>& ix = plan.indexer;
  if (ix.rank < 1 || ix.dims[ix.rank - 1] % w != 0) return false;
  const int64_t inner = ix.strides[k][ix.rank - 1];
  if (inner == 0) return true;
  if (inner != 1 || !alignedTo(data, bytes * size_t(w))) return false;
  for (int d = 0; d < ix.rank; ++d)
    if (ix.strides[k][d] % w != 0 && d != ix.rank - 1) return false;
  return true;
}

template <class A, class B, class Out, class F>
cudaError_t mapPair(const A* a, const B* b, Out* out, const BroadcastPlan<2>& plan, F f, cudaStream_t stream) {
  const int64_t n = plan.count;
  if (n == 0) return cudaSuccess;
  if (!plan.simple) {
    constexpr int W = packWidth<A, B, Out>();
    if (W > 1 && packsAlongInnerDim(plan, 0, a, sizeof(A), W) && packsAlongInnerDim(plan, 1, b, sizeof(B), W) &&
        alignedTo(out, sizeof(Out) * W)) {
      const BroadcastIndexer<2>& ix = plan.indexer;
      mapPairIndexedPackedKernel<W><<<gridFor(n / W), kThreadsPerBlock, 0, stream>>>(
          a, b, out, n / W, ix, ix.strides[0][ix.rank - 1] == 1, ix.strides[1][ix.rank - 1] == 1, f);
      return launchStatus();
    }
    mapPairIndexedKernel<<<gridFor(n), kThreadsPerBlock, 0, stream>>>(a, b, out, n, plan.indexer, f);
    return launchStatus();
  }
  constexpr int W = packWidth<A, B, Out>();
  const bool aOne = plan.repeats[0], bOne = plan.repeats[1];
  const bool packed = (aOne || alignedTo(a, sizeof(A) * W)) && (bOne || alignedTo(b, sizeof(B) * W)) &&
                      alignedTo(out, sizeof(Out) * W);
  mapPairSimpleKernel<W><<<gridFor(packed ? n / W + 1 : n), kThreadsPerBlock, 0, stream>>>(a, b, out, n, aOne, bOne,
                                                                                         packed, f);
  return launchStatus();
}

// ---- three inputs, broadcast ----
template <int W, class A, class B, class C, class Out, class F>
__global__ void mapTripleSimpleKernel(const A* a, const B* b, const C* c, Out* out, int64_t n, bool aOne, bool bOne,
                                      bool cOne, bool packed, F f) {
  const ComputeType<A> a0 = toCompute(a[0]);
  const ComputeType<B> b0 = toCompute(b[0]);
  const ComputeType<C> c0 = toCompute(c[0]);
  const int64_t packs = packed ? n / W : 0;
  KILN_GRID_STRIDE_LOOP(p, packs) {
    Pack<A, W> x;
    Pack<B, W> y;
    Pack<C, W> z;
    if (!aOne) x = reinterpret_cast<const Pack<A, W>*>(a)[p];
    if (!bOne) y = reinterpret_cast<const Pack<B, W>*>(b)[p];
    if (!cOne) z = reinterpret_cast<const Pack<C, W>*>(c)[p];
    Pack<Out, W> result;
#pragma unroll
    for (int k = 0; k < W; ++k)
      result.v[k] = storeAs<Out>(f(aOne ? a0 : toCompute(x.v[k]), bOne ? b0 : toCompute(y.v[k]),
                                   cOne ? c0 : toCompute(z.v[k])));
    reinterpret_cast<Pack<Out, W>*>(out)[p] = result;
  }
  for (int64_t i = packs * W + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = storeAs<Out>(f(aOne ? a0 : toCompute(a[i]), bOne ? b0 : toCompute(b[i]), cOne ? c0 : toCompute(c[i])));
}

template <class A, class B, class C, class Out, class F>
__global__ void mapTripleIndexedKernel(const A* a, const B* b, const C* c, Out* out, int64_t n,
                                       const __grid_constant__ BroadcastIndexer<3> indexer, F f) {
  KILN_GRID_STRIDE_LOOP(i, n) {
    int64_t offsets[3];
    indexer.offsets(i, offsets);
    out[i] = storeAs<Out>(f(toCompute(a[offsets[0]]), toCompute(b[offsets[1]]), toCompute(c[offsets[2]])));
  }
}

template <class A, class B, class C, class Out, class F>
cudaError_t mapTriple(const A* a, const B* b, const C* c, Out* out, const BroadcastPlan<3>& plan, F f,
                      cudaStream_t stream) {
  const int64_t n = plan.count;
  if (n == 0) return cudaSuccess;
  if (!plan.simple) {
    mapTripleIndexedKernel<<<gridFor(n), kThreadsPerBlock, 0, stream>>>(a, b, c, out, n, plan.indexer, f);
    return launchStatus();
  }
  constexpr int W = packWidth<A, B, C, Out>();
  const bool aOne = plan.repeats[0], bOne = plan.repeats[1], cOne = plan.repeats[2];
  const bool packed = (aOne || alignedTo(a, sizeof(A) * W)) && (bOne || alignedTo(b, sizeof(B) * W)) &&
                      (cOne || alignedTo(c, sizeof(C) * W)) && alignedTo(out, sizeof(Out) * W);
  mapTripleSimpleKernel<W><<<gridFor(packed ? n / W + 1 : n), kThreadsPerBlock, 0, stream>>>(
      a, b, c, out, n, aOne, bOne, cOne, packed, f);
  return launchStatus();
}

}  // namespace kiln::kernels::cuda
