// Cast: packed typed kernels for the pairs models cast all the time (between the float types,
// int32 <-> int64, float32 <-> integers and bool), and one kernel that reads and writes any type
// through run-time switches for the other 200-odd pairs.
#include "cast.h"
#include "cast_convert.h"
#include "elementwise_kernels.cuh"

#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

// Not mapDense: that converts through compute types, and a cast must see the storage types.
template <int W, class Src, class Dst>
__global__ void castTypedKernel(const Src* in, Dst* out, int64_t n, bool packed) {
  const int64_t packs = packed ? n / W : 0;
  KILN_GRID_STRIDE_LOOP(p, packs) {
    const Pack<Src, W> x = reinterpret_cast<const Pack<Src, W>*>(in)[p];
    Pack<Dst, W> y;
#pragma unroll
    for (int k = 0; k < W; ++k) y.v[k] = convertElement<Dst>(x.v[k]);
    reinterpret_cast<Pack<Dst, W>*>(out)[p] = y;
  }
  for (int64_t i = packs * W + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = convertElement<Dst>(in[i]);
}

template <class Src, class Dst>
cudaError_t castTyped(const void* in, void* out, int64_t n, cudaStream_t stream) {
  constexpr int W = packWidth<Src, Dst>();
  const bool packed = alignedTo(in, sizeof(Src) * W) && alignedTo(out, sizeof(Dst) * W);
  castTypedKernel<W><<<gridFor(packed ? n / W + 1 : n), kThreadsPerBlock, 0, stream>>>(
      static_cast<const Src*>(in), static_cast<Dst*>(out), n, packed);
  return launchStatus();
}

__global__ void castAnyKernel(const void* in, ElementType from, void* out, ElementType to, int64_t n) {
  KILN_GRID_STRIDE_LOOP(i, n) storeCastScalar(out, i, to, loadCastScalar(in, i, from));
}

cudaError_t castHotPair(const void* in, ElementType from, void* out, ElementType to, int64_t n, cudaStream_t stream,
                        bool& handled) {
  using E = ElementType;
  handled = true;
  auto is = [&](E src, E dst) { return from == src && to == dst; };
  if (is(E::kFloat32, E::kFloat16)) return castTyped<float, __half>(in, out, n, stream);
  if (is(E::kFloat16, E::kFloat32)) return castTyped<__half, float>(in, out, n, stream);
  if (is(E::kFloat32, E::kBFloat16)) return castTyped<float, __nv_bfloat16>(in, out, n, stream);
  if (is(E::kBFloat16, E::kFloat32)) return castTyped<__nv_bfloat16, float>(in, out, n, stream);
  if (is(E::kFloat16, E::kBFloat16)) return castTyped<__half, __nv_bfloat16>(in, out, n, stream);
  if (is(E::kBFloat16, E::kFloat16)) return castTyped<__nv_bfloat16, __half>(in, out, n, stream);
  if (is(E::kInt64, E::kInt32)) return castTyped<int64_t, int32_t>(in, out, n, stream);
  if (is(E::kInt32, E::kInt64)) return castTyped<int32_t, int64_t>(in, out, n, stream);
  if (is(E::kInt64, E::kFloat32)) return castTyped<int64_t, float>(in, out, n, stream);
  if (is(E::kInt32, E::kFloat32)) return castTyped<int32_t, float>(in, out, n, stream);
  if (is(E::kFloat32, E::kInt64)) return castTyped<float, int64_t>(in, out, n, stream);
  if (is(E::kFloat32, E::kInt32)) return castTyped<float, int32_t>(in, out, n, stream);
  if (is(E::kBool, E::kFloat32)) return castTyped<bool, float>(in, out, n, stream);
  if (is(E::kFloat32, E::kBool)) return castTyped<float, bool>(in, out, n, stream);
  handled = false;
  return cudaSuccess;
}

bool isKnown(ElementType type) { return uint8_t(type) <= uint8_t(ElementType::kFloat8E5M2); }

}  // namespace

cudaError_t launchCast(const void* in, ElementType from, void* out, ElementType to, int64_t n, cudaStream_t stream) {
  if (!isKnown(from) || !isKnown(to) || n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  if (from == to) {
    if (in == out) return cudaSuccess;
    return cudaMemcpyAsync(out, in, size_t(n) * elementBytes(from), cudaMemcpyDeviceToDevice, stream);
  }
  bool handled = false;
  const cudaError_t status = castHotPair(in, from, out, to, n, stream, handled);
  if (handled) return status;
  castAnyKernel<<<gridFor(n), kThreadsPerBlock, 0, stream>>>(in, from, out, to, n);
  return launchStatus();
}

}  // namespace kiln::kernels::cuda
