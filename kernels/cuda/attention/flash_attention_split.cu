// The key splits' second kernel (flash_attention.h): a warp per output row weighs each split's
// unnormalised output O_s by w_s = exp2(m_s - m), m the largest of the splits' row maxima (log2
// units), and writes out = sum(w_s O_s) / sum(w_s l_s). A split whose keys were all hidden has
// m_s = -inf and weighs 0; a row hidden in every split (or with no keys) is zeros, as in one pass.
#include "flash_attention.h"
#include "flash_attention_common.cuh"

#include "kernels/cuda/common/half_bits.cuh"
#include "kernels/cuda/common/launch.cuh"

#include <type_traits>

namespace kiln::kernels::cuda::flash {
namespace {

constexpr int kRowsPerBlock = 8;  // a warp each

template <class T>
__global__ void __launch_bounds__(32 * kRowsPerBlock) combineKeySplitsKernel(const Args a) {
  const int64_t lq = a.p.queryLength;
  const int64_t item = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (item >= a.batchHeads * lq) return;
  const int lane = int(threadIdx.x % 32), dv = int(a.p.valueDim);
  const int64_t head = item / lq, row = item % lq;
  const int64_t splitStride = a.batchHeads * lq;  // rows between one split's and the next's
  const float* const stats = a.partial + partialStatsAt(a);
  float largest = -INFINITY;
  for (int s = 0; s < a.keySplits; ++s) largest = fmaxf(largest, stats[(s * splitStride + item) * 2]);
  float weights[kFlashMaxKeySplits];
  float sum = 0.0f;
#pragma unroll
  for (int s = 0; s < int(kFlashMaxKeySplits); ++s) {
    weights[s] = 0.0f;
    if (s < a.keySplits && largest != -INFINITY) {
      const float m = stats[(s * splitStride + item) * 2];
      weights[s] = m == -INFINITY ? 0.0f : exp2f(m - largest);
      sum += weights[s] * stats[(s * splitStride + item) * 2 + 1];
    }
  }
  const float inverse = sum == 0.0f ? 0.0f : 1.0f / sum;
  const HeadOffsets at = headOffsetsOf(a.p, head);
  auto* const out =
      static_cast<std::conditional_t<std::is_same_v<T, float>, float, uint16_t>*>(a.out) + at.out + row * a.p.out.row;
  for (int c = lane; c < dv; c += 32) {
    float value = 0.0f;
#pragma unroll
    for (int s = 0; s < int(kFlashMaxKeySplits); ++s)
      if (s < a.keySplits) value += weights[s] * a.partial[(s * splitStride + item) * dv + c];
    if constexpr (std::is_same_v<T, float>)
      out[c] = value * inverse;
    else
      out[c] = bitsOf<T>(value * inverse);
  }
}

template <class T>
cudaError_t launchCombine(const Args& args, cudaStream_t stream) {
  const int64_t rows = args.batchHeads * args.p.queryLength;
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  combineKeySplitsKernel<T><<<unsigned(blocks), 32 * kRowsPerBlock, 0, stream>>>(args);
  return launchStatus();
}

}  // namespace

cudaError_t combineKeySplits(const Args& args, ElementType type, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat16:
      return launchCombine<__half>(args, stream);
    case ElementType::kBFloat16:
      return launchCombine<__nv_bfloat16>(args, stream);
    default:
      return launchCombine<float>(args, stream);
  }
}

}  // namespace kiln::kernels::cuda::flash
