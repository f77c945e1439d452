// CPU kernels for QuantizeLinear, DequantizeLinear (integers and fp8 e4m3fn) and DynamicQuantizeLinear.
#include <kernels/cpu/quant/quantize.h>

#include "matmul_quant.h"

namespace kiln {
namespace {

template <class Fn>
void dispatchQuantized(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kUInt8: return fn(uint8_t{});
    case DataType::kInt8: return fn(int8_t{});
    case DataType::kUInt16: return fn(uint16_t{});
    case DataType::kInt16: return fn(int16_t{});
    default: detail::throwUnsupportedType(type, "8/16-bit integer");
  }
}

// How scale (input 1) and zero point (input 2) map onto x: the tensor as [outer, axisLen, inner]
// with one scale per axis position; per-tensor is axisLen 1.
struct QuantLayout {
  int64_t outer = 1, axisLen = 1, inner = 1;
  std::vector<float> scales;
};

QuantLayout quantLayout(const KernelContext& ctx) {
  const HostTensor &x = ctx.input(0), &scale = ctx.input(1);
  QuantLayout layout;
  for (double s : scale.toDoubleVector()) layout.scales.push_back(float(s));
  if (ctx.hasInput(2) && ctx.input(2).elementCount() != scale.elementCount())
    ctx.fail("zero point holds " + std::to_string(ctx.input(2).elementCount()) + " values but scale holds " +
             std::to_string(scale.elementCount()));
  if (scale.elementCount() == 1) {
    layout.inner = x.elementCount();
    return layout;
  }
  const int64_t rank = int64_t(x.rank());
  int64_t axis = ctx.layer().attrInt("axis", 1);
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  if (scale.elementCount() != x.dim(size_t(axis)))
    ctx.fail("scale holds " + std::to_string(scale.elementCount()) + " values; expected 1 or " +
             std::to_string(x.dim(size_t(axis))) + " (one per position of axis " + std::to_string(axis) + ")");
  for (int64_t d = 0; d < rank; ++d) (d < axis ? layout.outer : d == axis ? layout.axisLen : layout.inner) *= x.dim(d);
  return layout;
}

template <class Q>
const Q* zeroPointOf(const KernelContext& ctx) {
  return ctx.hasInput(2) ? ctx.input(2).data<Q>() : nullptr;
}

const uint8_t* fp8ZeroPointOf(const KernelContext& ctx) {
  return ctx.hasInput(2) ? static_cast<const uint8_t*>(ctx.input(2).rawData()) : nullptr;
}

void runQuantizeLinear(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const QuantLayout L = quantLayout(ctx);
  HostTensor& y = ctx.allocateOutput(0);
  if (y.dtype() == DataType::kFloat8E4M3) {
    const bool saturate = ctx.layer().attrInt("saturate", 1) != 0;
    return dispatchFloat(x.dtype(), [&](auto inTag) {
      using In = decltype(inTag);
      kernels::quantizeLinearFp8<In>(x.data<In>(), L.scales.data(), fp8ZeroPointOf(ctx),
                                     static_cast<uint8_t*>(y.rawData()), L.outer, L.axisLen, L.inner, saturate);
    });
  }
  dispatchQuantized(y.dtype(), [&](auto qTag) {
    using Q = decltype(qTag);
    auto run = [&](auto inTag) {
      using In = decltype(inTag);
      kernels::quantizeLinear<In, Q>(x.data<In>(), L.scales.data(), zeroPointOf<Q>(ctx), y.data<Q>(), L.outer,
                                     L.axisLen, L.inner);
    };
    if (x.dtype() == DataType::kInt32)
      run(int32_t{});
    else
      dispatchFloat(x.dtype(), run);
  });
}

void runDequantizeLinear(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const QuantLayout L = quantLayout(ctx);
  HostTensor& y = ctx.allocateOutput(0);
  dispatchFloat(y.dtype(), [&](auto outTag) {
    using Out = decltype(outTag);
    if (x.dtype() == DataType::kFloat8E4M3)
      return kernels::dequantizeLinearFp8<Out>(static_cast<const uint8_t*>(x.rawData()), L.scales.data(),
                                               fp8ZeroPointOf(ctx), y.data<Out>(), L.outer, L.axisLen, L.inner);
    auto run = [&](auto qTag) {
      using Q = decltype(qTag);
      kernels::dequantizeLinear<Q, Out>(x.data<Q>(), L.scales.data(), zeroPointOf<Q>(ctx), y.data<Out>(), L.outer,
                                        L.axisLen, L.inner);
    };
    if (x.dtype() == DataType::kInt32)
      run(int32_t{});
    else
      dispatchQuantized(x.dtype(), run);
  });
}

void runDynamicQuantizeLinear(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  HostTensor& y = ctx.allocateOutput(0);
  HostTensor scale(DataType::kFloat32, {}), zeroPoint(DataType::kUInt8, {});
  kernels::dynamicQuantizeLinear(x.data<float>(), x.elementCount(), y.data<uint8_t>(), scale.data<float>(),
                                 zeroPoint.data<uint8_t>());
  if (ctx.outputCount() > 1) ctx.setOutput(1, scale);
  if (ctx.outputCount() > 2) ctx.setOutput(2, zeroPoint);
}

}  // namespace

void registerQuantizeCpuKernels(CpuKernelRegistry& registry) {
  registry.add("QuantizeLinear", runQuantizeLinear);
  registry.add("DequantizeLinear", runDequantizeLinear);
  registry.add("DynamicQuantizeLinear", runDynamicQuantizeLinear);
}

}  // namespace kiln
