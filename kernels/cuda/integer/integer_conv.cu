// ConvInteger and QLinearConv (integer_math.h): a direct convolution, one thread per output
// element over its group's channels and the kernel window.
#include "integer_common.cuh"

namespace kiln::kernels::cuda {
namespace {

int64_t outputCount(const IntegerConvShape& s) {
  return s.batch * s.outChannels * s.out[0] * s.out[1] * s.out[2];
}

template <class TX, class TW>
__device__ int32_t convolveAt(const QuantOperand& x, const QuantOperand& w, const IntegerConvShape& s, int64_t e,
                              int64_t& channel) {
  const int64_t ow = e % s.out[2], oh = e / s.out[2] % s.out[1], od = e / (s.out[2] * s.out[1]) % s.out[0];
  const int64_t rest = e / (s.out[0] * s.out[1] * s.out[2]), m = rest % s.outChannels, n = rest / s.outChannels;
  channel = m;
  const int64_t groupIn = s.inChannels / s.group, groupOut = s.outChannels / s.group, g = m / groupOut;
  const int64_t inPlane = s.in[0] * s.in[1] * s.in[2], window = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const TX* X = static_cast<const TX*>(x.data) + (n * s.inChannels + g * groupIn) * inPlane;
  const TW* W = static_cast<const TW*>(w.data) + m * groupIn * window;
  const int32_t zx = zeroPointAt<TX>(x.zero, 1, 0), zw = zeroPointAt<TW>(w.zero, w.zeroCount, m);
  int32_t acc = 0;
  for (int64_t c = 0; c < groupIn; ++c)
    for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
      const int64_t id = od * s.stride[0] - s.padBegin[0] + kd * s.dilation[0];
      if (id < 0 || id >= s.in[0]) continue;
      for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
        const int64_t ih = oh * s.stride[1] - s.padBegin[1] + kh * s.dilation[1];
        if (ih < 0 || ih >= s.in[1]) continue;
        for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
          const int64_t iw = ow * s.stride[2] - s.padBegin[2] + kw * s.dilation[2];
          if (iw < 0 || iw >= s.in[2]) continue;
          const int32_t xv = int32_t(X[c * inPlane + (id * s.in[1] + ih) * s.in[2] + iw]) - zx;
          const int32_t wv = int32_t(W[((c * s.kernel[0] + kd) * s.kernel[1] + kh) * s.kernel[2] + kw]) - zw;
          acc = wrappingMulAdd(acc, xv, wv);
        }
      }
    }
  return acc;
}

template <class TX, class TW>
__global__ void integerConvKernel(QuantOperand x, QuantOperand w, IntegerConvShape s, int64_t count, int32_t* y) {
  KILN_GRID_STRIDE_LOOP(e, count) {
    int64_t m;
    y[e] = convolveAt<TX, TW>(x, w, s, e, m);
  }
}

template <class TX, class TW, class Q>
__global__ void qlinearConvKernel(QuantOperand x, QuantOperand w, IntegerConvShape s, int64_t count, ConvRequantize r,
                                  Q* y) {
  KILN_GRID_STRIDE_LOOP(e, count) {
    int64_t m;
    const int32_t acc = convolveAt<TX, TW>(x, w, s, e, m);
    const float multiplier = r.wScale[r.wScaleCount == 1 ? 0 : m] * *r.xScale / *r.yScale;
    const int32_t biased = int32_t(uint32_t(acc) + uint32_t(r.bias ? r.bias[m] : 0));
    const float zero = r.yZero ? float(*static_cast<const Q*>(r.yZero)) : 0.0f;
    y[e] = saturateRound<Q>(rintf(float(biased) * multiplier) + zero);
  }
}

template <class Fn>
cudaError_t dispatchOperands(const QuantOperand& x, const QuantOperand& w, Fn&& fn) {
  return dispatchEightBit(x.type, [&](auto xTag) {
    return dispatchEightBit(w.type, [&](auto wTag) { return fn(xTag, wTag); });
  });
}

}  // namespace

cudaError_t integerConv(const QuantOperand& x, const QuantOperand& w, const IntegerConvShape& shape, int32_t* y,
                        cudaStream_t stream) {
  const int64_t count = outputCount(shape);
  if (count == 0) return cudaSuccess;
  if (shape.group < 1 || shape.inChannels % shape.group || shape.outChannels % shape.group) return cudaErrorInvalidValue;
  return dispatchOperands(x, w, [&](auto xTag, auto wTag) {
    integerConvKernel<decltype(xTag), decltype(wTag)><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(x, w, shape,
                                                                                                     count, y);
    return launchStatus();
  });
}

cudaError_t qlinearConv(const QuantOperand& x, const QuantOperand& w, const IntegerConvShape& shape,
                        const ConvRequantize& requantize, void* y, cudaStream_t stream) {
  const int64_t count = outputCount(shape);
  if (count == 0) return cudaSuccess;
  if (shape.group < 1 || shape.inChannels % shape.group || shape.outChannels % shape.group) return cudaErrorInvalidValue;
  return dispatchOperands(x, w, [&](auto xTag, auto wTag) {
    return dispatchEightBit(requantize.yType, [&](auto qTag) {
      using Q = decltype(qTag);
      qlinearConvKernel<decltype(xTag), decltype(wTag), Q><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(
          x, w, shape, count, requantize, static_cast<Q*>(y));
      return launchStatus();
    });
  });
}

}  // namespace kiln::kernels::cuda
