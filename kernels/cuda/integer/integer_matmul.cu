// MatMulInteger and QLinearMatMul (integer_math.h): one thread per output element over K.
#include "integer_common.cuh"

namespace kiln::kernels::cuda {
namespace {

template <class TA, class TB>
__device__ int32_t productAt(const QuantOperand& a, const QuantOperand& b, const IntegerMatMulShape& s, int64_t e) {
  const int64_t n = e % s.N, m = e / s.N % s.M;
  int64_t matrix = e / (s.M * s.N), aOffset = 0, bOffset = 0;
  for (int d = s.batchRank - 1; d >= 0; --d) {
    const int64_t index = matrix % s.batchDims[d];
    matrix /= s.batchDims[d];
    aOffset += index * s.aStrides[d];
    bOffset += index * s.bStrides[d];
  }
  const TA* A = static_cast<const TA*>(a.data) + aOffset + m * s.K;
  const TB* B = static_cast<const TB*>(b.data) + bOffset + n;
  const int32_t za = zeroPointAt<TA>(a.zero, a.zeroCount, m), zb = zeroPointAt<TB>(b.zero, b.zeroCount, n);
  int32_t acc = 0;
  for (int64_t k = 0; k < s.K; ++k) acc = wrappingMulAdd(acc, int32_t(A[k]) - za, int32_t(B[k * s.N]) - zb);
  return acc;
}

int64_t outputCount(const IntegerMatMulShape& s) {
  int64_t n = s.M * s.N;
  for (int d = 0; d < s.batchRank; ++d) n *= s.batchDims[d];
  return n;
}

template <class TA, class TB>
__global__ void integerMatMulKernel(QuantOperand a, QuantOperand b, IntegerMatMulShape s, int64_t count, int32_t* y) {
  KILN_GRID_STRIDE_LOOP(e, count) y[e] = productAt<TA, TB>(a, b, s, e);
}

template <class TA, class TB, class Q>
__global__ void qlinearMatMulKernel(QuantOperand a, QuantOperand b, IntegerMatMulShape s, int64_t count,
                                    MatMulRequantize r, Q* y) {
  KILN_GRID_STRIDE_LOOP(e, count) {
    const int64_t n = e % s.N, m = e / s.N % s.M;
    const float rowScale = r.aScale[r.aScaleCount == 1 ? 0 : m] / *r.yScale;
    const float multiplier = rowScale * r.bScale[r.bScaleCount == 1 ? 0 : n];
    const float zero = r.yZero ? float(*static_cast<const Q*>(r.yZero)) : 0.0f;
    y[e] = saturateRound<Q>(rintf(float(productAt<TA, TB>(a, b, s, e)) * multiplier) + zero);
  }
}

template <class Fn>
cudaError_t dispatchOperands(const QuantOperand& a, const QuantOperand& b, Fn&& fn) {
  return dispatchEightBit(a.type, [&](auto aTag) {
    return dispatchEightBit(b.type, [&](auto bTag) { return fn(aTag, bTag); });
  });
}

}  // namespace

cudaError_t integerMatMul(const QuantOperand& a, const QuantOperand& b, const IntegerMatMulShape& shape, int32_t* y,
                          cudaStream_t stream) {
  const int64_t count = outputCount(shape);
  if (count == 0) return cudaSuccess;
  return dispatchOperands(a, b, [&](auto aTag, auto bTag) {
    integerMatMulKernel<decltype(aTag), decltype(bTag)><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(a, b, shape,
                                                                                                       count, y);
    return launchStatus();
  });
}

cudaError_t qlinearMatMul(const QuantOperand& a, const QuantOperand& b, const IntegerMatMulShape& shape,
                          const MatMulRequantize& requantize, void* y, cudaStream_t stream) {
  const int64_t count = outputCount(shape);
  if (count == 0) return cudaSuccess;
  return dispatchOperands(a, b, [&](auto aTag, auto bTag) {
    return dispatchEightBit(requantize.yType, [&](auto qTag) {
      using Q = decltype(qTag);
      qlinearMatMulKernel<decltype(aTag), decltype(bTag), Q><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(
          a, b, shape, count, requantize, static_cast<Q*>(y));
      return launchStatus();
    });
  });
}

}  // namespace kiln::kernels::cuda
