#include "small_float_layers.h"

#include <kernels/cuda/common/small_floats.h>

#include "../common/parallel.h"
#include "../gemm/gemm.h"
#include "int8_layers.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kiln::kernels {
namespace {

constexpr int64_t kGrain = 16384;

// Calls fn(first, stride, length, block) for every block: its first element, the distance between
// its elements, how many it has and its index among the block scales.
template <class Fn>
void forEachBlock(const BlockedAxis& layout, Fn&& fn) {
  const int64_t blocks = layout.blocks();
  parallelFor(layout.outer * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, layout.inner * layout.blockSize)),
              [&](int64_t begin, int64_t end) {
                for (int64_t ob = begin; ob < end; ++ob) {
                  const int64_t o = ob / blocks, b = ob % blocks;
                  const int64_t a0 = b * layout.blockSize, length = std::min(layout.blockSize, layout.axisLen - a0);
                  for (int64_t k = 0; k < layout.inner; ++k)
                    fn((o * layout.axisLen + a0) * layout.inner + k, layout.inner, length,
                       (o * blocks + b) * layout.inner + k);
                }
              });
}

}  // namespace

void fp8Values(const float* x, int64_t count, float scale, float* out) {
  parallelFor(count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = decodeE4M3(encodeE4M3(x[i] / scale));
  });
}

void fp8Decoded(const uint8_t* codes, int64_t count, float* out) {
  parallelFor(count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = decodeE4M3(codes[i]);
  });
}

void nvfp4Quantize(const float* x, const BlockedAxis& layout, float tensorScale, uint8_t* codes, uint8_t* blockScales) {
  forEachBlock(layout, [&](int64_t first, int64_t stride, int64_t length, int64_t block) {
    float amax = 0;
    for (int64_t j = 0; j < length; ++j) amax = std::max(amax, std::fabs(x[first + j * stride]));
    const uint8_t s = encodeE4M3(amax / (kE2M1Max * tensorScale));
    blockScales[block] = s;
    const float step = decodeE4M3(s) * tensorScale;  // what one unit of e2m1 is worth in this block
    for (int64_t j = 0; j < length; ++j)
      codes[first + j * stride] = step > 0 ? encodeE2M1(x[first + j * stride] / step) : 0;
  });
}

void nvfp4Decoded(const uint8_t* codes, const uint8_t* blockScales, const BlockedAxis& layout, float* out) {
  forEachBlock(layout, [&](int64_t first, int64_t stride, int64_t length, int64_t block) {
    const float s = decodeE4M3(blockScales[block]);
    for (int64_t j = 0; j < length; ++j) out[first + j * stride] = decodeE2M1(codes[first + j * stride]) * s;
  });
}

void nvfp4Values(const float* x, const BlockedAxis& layout, float tensorScale, float* out) {
  const int64_t count = layout.outer * layout.axisLen * layout.inner;
  std::vector<uint8_t> codes(static_cast<size_t>(count)), scales(static_cast<size_t>(layout.scaleCount()));
  nvfp4Quantize(x, layout, tensorScale, codes.data(), scales.data());
  nvfp4Decoded(codes.data(), scales.data(), layout, out);
}

void dequantizedConvolution(const ConvShape& shape, const float* x, const float* w, const float* multipliers,
                            const float* bias, const Epilogue& epilogue, float* y) {
  convolution<float>(shape, x, w, nullptr, y);
  dequantizeConvolutionSums(shape, multipliers, bias, epilogue, y);
}

void dequantizedMatMul(const float* A, const float* B, float* C, int64_t batch, const int64_t* aOffsets,
                       const int64_t* bOffsets, int64_t M, int64_t N, int64_t K, const float* multipliers) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  batchedMatMul<float>(A, B, C, batch, aOffsets, bOffsets, M, N, K);
  parallelFor(batch * M, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, N)), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row)
      for (int64_t j = 0; j < N; ++j) C[row * N + j] *= multipliers[j];
  });
}

}  // namespace kiln::kernels
