// CPU kernels for the conv_pool op family: the convolutions here, the pools in conv_pool_pooling.cpp.
#include "../../../ops/op_families.h"
#include "conv_pool_common.h"

#include <kernels/cpu/conv/conv.h>

namespace kiln {

void registerPoolingCpuKernels(CpuKernelRegistry& registry);
void registerConvTactics(CpuKernelRegistry& registry);

namespace {

// Conv and ConvTranspose: X, W, optional B of one float type, computed in float32 or float64.
template <bool kTranspose>
void runFloatConv(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& w = ctx.input(1);
  kernels::ConvShape shape =
      kTranspose ? transposeConvShape(ctx.layer(), x.dims(), w.dims()) : forwardConvShape(ctx.layer(), x, w);
  withFloatComputeType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    constexpr DataType type = DataTypeOf<T>::value;
    HostTensor xs = convertFloatTensor(x, type), ws = convertFloatTensor(w, type);
    HostTensor bias = ctx.hasInput(2) ? convertFloatTensor(ctx.input(2), type) : HostTensor();
    const T* b = bias.empty() ? nullptr : bias.data<T>();
    computeOutput(ctx, 0, type, [&](HostTensor& y) {
      if constexpr (kTranspose) kernels::convTranspose<T>(shape, xs.data<T>(), ws.data<T>(), b, y.data<T>());
      else kernels::convolution<T>(shape, xs.data<T>(), ws.data<T>(), b, y.data<T>());
    });
  });
}

// An 8-bit tensor as int32 with its zero point subtracted. The zero point is absent (0), one value,
// or one value per each of `blocks` equal leading blocks (per output channel of the weights).
std::vector<int32_t> centered(const HostTensor& t, const HostTensor* zeroPoint, int64_t blocks) {
  std::vector<int64_t> zp = zeroPoint ? zeroPoint->toInt64Vector() : std::vector<int64_t>{0};
  const int64_t count = t.elementCount(), blockSize = blocks > 0 ? count / blocks : count;
  std::vector<int32_t> out(static_cast<size_t>(count));
  dispatchInteger(t.dtype(), [&](auto tag) {
    using Q = decltype(tag);
    const Q* src = t.data<Q>();
    for (int64_t i = 0; i < count; ++i)
      out[size_t(i)] = int32_t(src[i]) - int32_t(zp.size() == 1 ? zp[0] : zp[size_t(i / blockSize)]);
  });
  return out;
}

void checkZeroPointCount(const KernelContext& ctx, size_t index, int64_t channels) {
  if (!ctx.hasInput(index)) return;
  int64_t n = ctx.input(index).elementCount();
  if (n != 1 && n != channels)
    ctx.fail("input " + std::to_string(index) + " ('" + ctx.layer().inputs[index] + "') has " + std::to_string(n) +
             " values; it needs 1 or one per output channel (" + std::to_string(channels) + ")");
}

void runConvInteger(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& w = ctx.input(1);
  kernels::ConvShape shape = forwardConvShape(ctx.layer(), x, w);
  checkZeroPointCount(ctx, 2, 1);
  checkZeroPointCount(ctx, 3, w.dim(0));
  std::vector<int32_t> xc = centered(x, ctx.hasInput(2) ? &ctx.input(2) : nullptr, 1);
  std::vector<int32_t> wc = centered(w, ctx.hasInput(3) ? &ctx.input(3) : nullptr, w.dim(0));
  kernels::convolutionInt32(shape, xc.data(), wc.data(), ctx.allocateOutput(0).data<int32_t>());
}

void runQLinearConv(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& w = ctx.input(3);
  const int64_t channels = w.dim(0);
  kernels::ConvShape shape = forwardConvShape(ctx.layer(), x, w);
  checkZeroPointCount(ctx, 2, 1);
  checkZeroPointCount(ctx, 4, channels);
  checkZeroPointCount(ctx, 5, channels);
  std::vector<int32_t> xc = centered(x, &ctx.input(2), 1);
  std::vector<int32_t> wc = centered(w, ctx.hasInput(5) ? &ctx.input(5) : nullptr, channels);
  std::vector<int32_t> acc(size_t(shape.batch * channels * shape.window.outSize()));
  kernels::convolutionInt32(shape, xc.data(), wc.data(), acc.data());

  const float xScale = floatValues(ctx.input(1)).at(0), yScale = floatValues(ctx.input(6)).at(0);
  std::vector<float> multiplier = floatValues(ctx.input(4));
  multiplier.resize(size_t(channels), multiplier.at(0));  // a scalar scale applies to every channel
  for (float& m : multiplier) m = m * xScale / yScale;
  std::vector<int32_t> bias;
  if (ctx.hasInput(8))
    for (int64_t b : ctx.input(8).toInt64Vector()) bias.push_back(int32_t(b));
  const int32_t yZeroPoint = ctx.hasInput(7) ? int32_t(ctx.input(7).toInt64Vector().at(0)) : 0;
  HostTensor& y = ctx.allocateOutput(0);
  auto store = [&](auto* out) {
    kernels::requantize(shape.batch, channels, shape.window.outSize(), acc.data(), bias.empty() ? nullptr : bias.data(),
                        multiplier.data(), yZeroPoint, out);
  };
  if (y.dtype() == DataType::kInt8) store(y.data<int8_t>());
  else if (y.dtype() == DataType::kUInt8) store(y.data<uint8_t>());
  else ctx.fail("output must be int8 or uint8 (the type of y_zero_point), got " + std::string(toString(y.dtype())));
}

}  // namespace

void registerConvPoolCpuKernels(CpuKernelRegistry& registry) {
  registry.add("Conv", runFloatConv<false>);
  registry.add("ConvTranspose", runFloatConv<true>);
  registry.add("ConvInteger", runConvInteger);
  registry.add("QLinearConv", runQLinearConv);
  registerPoolingCpuKernels(registry);
  registerConvTactics(registry);
}

}  // namespace kiln
