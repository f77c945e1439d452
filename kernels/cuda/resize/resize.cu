#include "resize_plan.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <algorithm>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

// Planes one thread serves with the taps it computed once (the N*C of NCHW).
constexpr int kPlanesPerThread = 4;

dim3 resizeGrid(const ResizePlan& plan) {
  const int64_t planeGroups = (plan.planes + kPlanesPerThread - 1) / kPlanesPerThread;
  const int64_t perGroup = std::max<int64_t>(1, int64_t(gridFor(plan.planeOut)) / std::max<int64_t>(1, planeGroups));
  return dim3(unsigned(perGroup), unsigned(std::min<int64_t>(planeGroups, 65535)));
}

template <class T>
__global__ void resizeNearestKernel(const T* __restrict__ src, T* __restrict__ dst,
                                    const __grid_constant__ ResizePlan plan, T extrapolation) {
  for (int64_t p0 = int64_t(blockIdx.y) * kPlanesPerThread; p0 < plan.planes;
       p0 += int64_t(gridDim.y) * kPlanesPerThread) {
    KILN_GRID_STRIDE_LOOP(pixel, plan.planeOut) {
      const int64_t from = plan.nearestOffset(pixel);
#pragma unroll
      for (int q = 0; q < kPlanesPerThread; ++q) {
        const int64_t p = p0 + q;
        if (p < plan.planes) dst[p * plan.planeOut + pixel] = from < 0 ? extrapolation : src[p * plan.planeIn + from];
      }
    }
  }
}

template <class T>
__global__ void resizeInterpolateKernel(const T* __restrict__ src, T* __restrict__ dst,
                                        const __grid_constant__ ResizePlan plan, float extrapolation) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  for (int64_t p0 = int64_t(blockIdx.y) * kPlanesPerThread; p0 < plan.planes;
       p0 += int64_t(gridDim.y) * kPlanesPerThread) {
    const int planes = int(std::min<int64_t>(kPlanesPerThread, plan.planes - p0));
    const T* in = src + p0 * plan.planeIn;
    KILN_GRID_STRIDE_LOOP(pixel, plan.planeOut) {
      Acc acc[kPlanesPerThread] = {};
      const bool inside = plan.forEachTap(pixel, [&](int64_t offset, float weight) {
#pragma unroll
        for (int q = 0; q < kPlanesPerThread; ++q)
          if (q < planes) acc[q] += Acc(weight) * Acc(toCompute(in[q * plan.planeIn + offset]));
      });
#pragma unroll
      for (int q = 0; q < kPlanesPerThread; ++q) {
        if (q >= planes) continue;
        const Acc value = inside ? acc[q] : Acc(extrapolation);
        T* out = dst + (p0 + q) * plan.planeOut + pixel;
        if constexpr (std::is_same_v<T, double>)
          *out = value;
        else
          *out = fromCompute<T>(value);
      }
    }
  }
}

// The extrapolation value in the element type, for nearest (which moves bits): floats round to
// nearest even, integers truncate, as the CPU kernel's fromFloat does.
uint64_t valueBits(float value, ElementType type) {
  auto bits = [](auto v) {
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
  };
  switch (type) {
    case ElementType::kFloat32: return bits(value);
    case ElementType::kFloat64: return bits(double(value));
    case ElementType::kFloat16: return bits(__float2half_rn(value));
    case ElementType::kBFloat16: return bits(__float2bfloat16_rn(value));
    case ElementType::kFloat8E4M3: return bits(__nv_fp8_e4m3(value));
    case ElementType::kFloat8E5M2: return bits(__nv_fp8_e5m2(value));
    case ElementType::kBool: return value != 0;
    case ElementType::kUInt64: return uint64_t(value);
    default: return uint64_t(int64_t(value));  // truncated to the type's width by the caller
  }
}

}  // namespace

cudaError_t resize(const void* src, const std::vector<int64_t>& srcDims, void* dst, const std::vector<int64_t>& dstDims,
                   const std::vector<double>& scales, const std::vector<double>& roiStart,
                   const std::vector<double>& roiEnd, const ResizeOptions& options, ElementType type,
                   cudaStream_t stream) {
  const auto plan = planResize(srcDims, dstDims, scales, roiStart, roiEnd, options);
  if (!plan) return cudaErrorInvalidValue;
  if (options.mode != ResizeMode::kNearest && !isFloatType(type)) return cudaErrorInvalidValue;
  if (plan->planes * plan->planeOut == 0) return cudaSuccess;
  const dim3 grid = resizeGrid(*plan);
  if (options.mode == ResizeMode::kNearest) {
    const uint64_t fill = valueBits(options.extrapolationValue, type);
    return dispatchBySize(type, [&](auto tag) {
      using T = decltype(tag);
      resizeNearestKernel<T>
          <<<grid, kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst), *plan, T(fill));
      return launchStatus();
    });
  }
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    resizeInterpolateKernel<T><<<grid, kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst),
                                                                      *plan, options.extrapolationValue);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
