#include "narrow_pointwise_conv.h"

#include <kernels/cuda/common/half_bits.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/resident_blocks.cuh>
#include <kernels/cuda/common/warp_matrix.cuh>
#include <kernels/cuda/elementwise/fused_activation.cuh>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

constexpr int kColumns = 64;            // output channels a block: 8 mma tiles of 8
constexpr int kWarps = 4;               // a block's warps, each on its own row tiles
constexpr int kStageStride = 72;        // floats a staged row: 64 + 8, so the fragments' float2 writes miss no bank
constexpr int64_t kIndexLimit = int64_t(1) << 31;

struct Args {
  const uint16_t* x;
  const uint16_t* w;
  const uint16_t* bias;
  const uint16_t* residual;
  uint16_t* y;
  int32_t rows, channels, outChannels, rowTiles;
  Activation activation;
  float alpha, beta;
  bool residualBeforeActivation;
};

// Row tile `tile`'s A fragments (rows 16·tile + g and + 8; k pairs 2t, 2t + 8 of each 16-wide
// step), zero past the rows and past C (a multiple of 8: a pair is all inside or all outside).
template <int kSteps>
__device__ __forceinline__ void loadRows(const Args& p, int tile, int g, int t, uint32_t (&a)[kSteps][4]) {
  const int r0 = tile * 16 + g, r1 = r0 + 8;
  const bool in0 = r0 < p.rows, in1 = r1 < p.rows;
  const uint32_t* const row0 = reinterpret_cast<const uint32_t*>(p.x + size_t(in0 ? r0 : 0) * p.channels);
  const uint32_t* const row1 = reinterpret_cast<const uint32_t*>(p.x + size_t(in1 ? r1 : 0) * p.channels);
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int k = s * 16 + 2 * t;
    const bool low = k < p.channels, high = k + 8 < p.channels;
    a[s][0] = in0 && low ? row0[k / 2] : 0u;
    a[s][1] = in1 && low ? row1[k / 2] : 0u;
    a[s][2] = in0 && high ? row0[(k + 8) / 2] : 0u;
    a[s][3] = in1 && high ? row1[(k + 8) / 2] : 0u;
  }
}

// Block (b, column block c): row tiles 4b + warp, then a grid's worth of tiles further, for output
// channels 64c on. kSteps 16-wide steps cover C (the steps past C are skipped).
template <class T, int kSteps, int kActivation>
__global__ void __launch_bounds__(32 * kWarps) narrowPointwiseConvKernel(const __grid_constant__ Args p) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(KILN_CUDA_EMULATION)
  constexpr int kFilterStride = kSteps * 16 + 8;  // halves a filter row: 4 banks over a multiple of 32
  extern __shared__ uint4 shared[];
  uint16_t* const filter = reinterpret_cast<uint16_t*>(shared);                     // [64][kFilterStride]
  float* const bias = reinterpret_cast<float*>(filter + kColumns * kFilterStride);  // [64]
  float* const staging = bias + kColumns;                                           // [warps][16][kStageStride]
  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
  const int n0 = int(blockIdx.y) * kColumns, columns = kColumns < p.outChannels - n0 ? kColumns : p.outChannels - n0,
            tiles = columns / 8;
  const int steps = (p.channels + 15) / 16;
  // The block's filter rows in T, zero past K and past C (the padded k then adds 0).
  for (int i = tid; i < kColumns * kSteps * 16; i += 32 * kWarps) {
    const int row = i / (kSteps * 16), k = i - row * (kSteps * 16);
    filter[row * kFilterStride + k] = row < columns && k < p.channels ? p.w[size_t(n0 + row) * p.channels + k] : 0;
  }
  for (int i = tid; i < kColumns; i += 32 * kWarps) bias[i] = p.bias && i < columns ? valueOf<T>(p.bias[n0 + i]) : 0.0f;
  __syncthreads();

  float* const stage = staging + warp * 16 * kStageStride;
  const int tileStride = int(gridDim.x) * kWarps;
  int tile = int(blockIdx.x) * kWarps + warp;
  uint32_t a[kSteps][4];
  if (tile < p.rowTiles) loadRows<kSteps>(p, tile, g, t, a);
  for (; tile < p.rowTiles; tile += tileStride) {
    float sums[8][4];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      sums[j][0] = sums[j][1] = sums[j][2] = sums[j][3] = 0.0f;
      if (j < tiles) {
        const uint16_t* const column = filter + (j * 8 + g) * kFilterStride + 2 * t;
#pragma unroll
        for (int s = 0; s < kSteps; ++s)
          if (s < steps) {
            uint32_t b0, b1;
            std::memcpy(&b0, column + s * 16, 4);
            std::memcpy(&b1, column + s * 16 + 8, 4);
            mma16816<T>(sums[j], a[s], b0, b1);
          }
      }
    }
    // The next tile's rows load while this one's sums go out.
    if (tile + tileStride < p.rowTiles) loadRows<kSteps>(p, tile + tileStride, g, t, a);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (j < tiles) {
        float* const at = stage + g * kStageStride + j * 8 + 2 * t;
        *reinterpret_cast<float2*>(at) = make_float2(sums[j][0], sums[j][1]);
        *reinterpret_cast<float2*>(at + 8 * kStageStride) = make_float2(sums[j][2], sums[j][3]);
      }
    __syncwarp();
    // 16 rows of `tiles` 8-channel vectors: bias, residual, activation, one rounding, a 16-byte store.
    for (int v = lane; v < 16 * tiles; v += 32) {
      const int r = v / tiles, c = (v - r * tiles) * 8, row = tile * 16 + r;
      if (row >= p.rows) continue;
      const size_t out = size_t(row) * p.outChannels + n0 + c;
      uint16_t residual[8] = {};
      if (p.residual) {
        const uint4 packed = *reinterpret_cast<const uint4*>(p.residual + out);
        std::memcpy(residual, &packed, 16);
      }
      const float4* const staged = reinterpret_cast<const float4*>(stage + r * kStageStride + c);
      const float4* const biases = reinterpret_cast<const float4*>(bias + c);
      const float4 s0 = staged[0], s1 = staged[1], b0 = biases[0], b1 = biases[1];
      const float sum[8] = {s0.x + b0.x, s0.y + b0.y, s0.z + b0.z, s0.w + b0.w,
                            s1.x + b1.x, s1.y + b1.y, s1.z + b1.z, s1.w + b1.w};
      uint32_t result[4];
#pragma unroll
      for (int e = 0; e < 8; e += 2) {
        float value[2] = {sum[e], sum[e + 1]};
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (p.residual && p.residualBeforeActivation) value[h] += valueOf<T>(residual[e + h]);
          value[h] = fusedActivationOf<kActivation>(value[h], p.activation, p.alpha, p.beta);
          if (p.residual && !p.residualBeforeActivation) value[h] += valueOf<T>(residual[e + h]);
        }
        result[e / 2] = packPair<T>(value[0], value[1]);
      }
      *reinterpret_cast<uint4*>(p.y + out) = make_uint4(result[0], result[1], result[2], result[3]);
    }
    __syncwarp();
  }
#endif
}

int64_t sharedBytesOf(int steps) {
  return int64_t(kColumns) * (steps * 16 + 8) * 2 + kColumns * 4 + int64_t(kWarps) * 16 * kStageStride * 4;
}

template <class T, int kSteps>
auto kernelFor(Activation a) {
  if (a == Activation::kNone) return narrowPointwiseConvKernel<T, kSteps, int(Activation::kNone)>;
  if (a == Activation::kSiLU) return narrowPointwiseConvKernel<T, kSteps, int(Activation::kSiLU)>;
  return narrowPointwiseConvKernel<T, kSteps, kRuntimeActivation>;
}

// The instantiation for the problem's type and the fewest 16-wide steps (1, 2, 4 or 8) covering C.
template <class T>
auto kernelFor(const NarrowPointwiseConvProblem& p, int& steps) {
  const int64_t needed = (p.channels + 15) / 16;
  steps = needed <= 1 ? 1 : needed <= 2 ? 2 : needed <= 4 ? 4 : 8;
  if (steps == 1) return kernelFor<T, 1>(p.activation);
  if (steps == 2) return kernelFor<T, 2>(p.activation);
  if (steps == 4) return kernelFor<T, 4>(p.activation);
  return kernelFor<T, 8>(p.activation);
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <class T>
cudaError_t launch(const NarrowPointwiseConvProblem& p, const Args& a, cudaStream_t stream) {
  int steps = 0;
  const auto kernel = kernelFor<T>(p, steps);
  const int64_t sharedBytes = sharedBytesOf(steps);
  if (const cudaError_t status = allowSharedBytes(kernel, sharedBytes); status != cudaSuccess) return status;
  const int64_t columnBlocks = (p.outChannels + kColumns - 1) / kColumns;
  const int64_t resident = std::max<int64_t>(1, residentBlocks(kernel, 32 * kWarps, sharedBytes) / columnBlocks);
  const int64_t blocks = std::min<int64_t>((a.rowTiles + kWarps - 1) / kWarps, resident);
  kernel<<<dim3(unsigned(blocks), unsigned(columnBlocks)), 32 * kWarps, size_t(sharedBytes), stream>>>(a);
  return launchStatus();
}

}  // namespace

const char* narrowPointwiseConvRefusal(const NarrowPointwiseConvProblem& p) {
  if (p.type != ElementType::kFloat16 && p.type != ElementType::kBFloat16) return "its type is not float16 or bfloat16";
  if (p.channels < 8 || p.channels % 8 != 0 || p.channels > kNarrowConvMaxChannels)
    return "its input channels are not a multiple of 8 from 8 to 128";
  if (p.outChannels < 8 || p.outChannels % 8 != 0) return "its output channels are not a positive multiple of 8";
  if (p.rows < 0) return "its row count is negative";
  if (p.rows * p.outChannels >= kIndexLimit || p.rows * p.channels >= kIndexLimit)
    return "its input or output has 2^31 elements or more";
  if (p.outChannels * p.channels >= kIndexLimit) return "its filter has 2^31 elements or more";
  return nullptr;
}

cudaError_t narrowPointwiseConv(const NarrowPointwiseConvProblem& p, const void* x, const void* w, const void* bias,
                                const void* residual, void* y, cudaStream_t stream) {
  if (narrowPointwiseConvRefusal(p)) return cudaErrorInvalidValue;
  if (!x || !w || !y || !aligned(x, 16) || !aligned(y, 16) || !aligned(w, 2) || (bias && !aligned(bias, 2)) ||
      (residual && !aligned(residual, 16)))
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  Args a{};
  a.x = static_cast<const uint16_t*>(x), a.w = static_cast<const uint16_t*>(w);
  a.bias = static_cast<const uint16_t*>(bias), a.residual = static_cast<const uint16_t*>(residual);
  a.y = static_cast<uint16_t*>(y);
  a.rows = int32_t(p.rows), a.channels = int32_t(p.channels), a.outChannels = int32_t(p.outChannels);
  a.rowTiles = int32_t((p.rows + 15) / 16);
  a.activation = p.activation, a.alpha = p.alpha, a.beta = p.beta;
  a.residualBeforeActivation = p.residualBeforeActivation;
  return p.type == ElementType::kFloat16 ? launch<__half>(p, a, stream) : launch<__nv_bfloat16>(p, a, stream);
}

}  // namespace kiln::kernels::cuda
