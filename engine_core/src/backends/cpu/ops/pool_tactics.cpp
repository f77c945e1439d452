// The CPU backend's pooling tactics for float32 2-D MaxPool (without indices), AveragePool,
// GlobalAveragePool and GlobalMaxPool:
//   cpu.pool.kiln    the op's own kernel (NCHW)
//   cpu.pool.onednn  oneDNN's pooling on channels-last data, so the engine can keep a CNN's stem and
//                    head channels-last between oneDNN convolutions
// The builder times both; other pools (1-D/3-D, other types, ceil-mode averages counting padding
// past the pads) run the op's kernel alone.
#include <kernels/cpu/pool/onednn_pool.h>

#include "../../../ops/conv_pool_window.h"
#include "../../../runtime/host_execution.h"
#include "../cpu_kernel.h"

#include <optional>

namespace kiln {
namespace {

constexpr const char* kKilnTactic = "cpu.pool.kiln";
constexpr const char* kOneDnnTactic = "cpu.pool.onednn";

// The pool a layer computes on 4-D input dims `x`, when oneDNN can compute it.
std::optional<kernels::PoolShape> poolShape(const Layer& layer, const std::vector<int64_t>& x) {
  if (x.size() != 4) return std::nullopt;
  kernels::PoolShape shape;
  shape.batch = x[0];
  shape.channels = x[1];
  try {
    if (layer.opType == "GlobalAveragePool" || layer.opType == "GlobalMaxPool") {
      shape.kind = layer.opType == "GlobalMaxPool" ? kernels::PoolKind::kMax : kernels::PoolKind::kAverageExcludingPadding;
      for (int a = 1; a < kernels::kMaxSpatialRank; ++a) {
        shape.window.in[a] = shape.window.kernel[a] = x[size_t(a) + 1];
        shape.window.out[a] = 1;
      }
    } else {
      if (layer.opType == "MaxPool" && layer.outputs.size() > 1 && !layer.outputs[1].empty()) return std::nullopt;
      shape.window = makeSpatialWindow(layer, readWindowAttributes(layer, 2), {x[2], x[3]});
      shape.kind = layer.opType == "MaxPool"                      ? kernels::PoolKind::kMax
                   : layer.attrInt("count_include_pad", 0) != 0 ? kernels::PoolKind::kAverageIncludingPadding
                                                                  : kernels::PoolKind::kAverageExcludingPadding;
    }
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!kernels::OneDnnPooling::supports(shape)) return std::nullopt;
  return shape;
}

bool applies(const Layer& layer, const LayerInputs& in) {
  if (in.types.empty() || in.types[0] != DataType::kFloat32 || in.dims.empty()) return false;
  return poolShape(layer, in.dims[0]).has_value();
}

uint64_t oneDnnWorkspaceBytes(const Layer& layer, const LayerShapes& dims) {
  auto shape = dims.empty() ? std::nullopt : poolShape(layer, dims[0]);
  return shape ? kernels::OneDnnPooling(false, false).workspaceBytes(*shape) : 0;
}

CpuKernelFn oneDnnKernel(const Tactic& tactic) {
  auto pooling = std::make_shared<kernels::OneDnnPooling>(tactic.inputFormat(0) == TensorFormat::kNHWC,
                                                          tactic.outputFormat == TensorFormat::kNHWC);
  return [pooling](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    if (x.dtype() != DataType::kFloat32)
      ctx.fail("the plan's pooling tactic runs float32 only, got " + std::string(toString(x.dtype())) +
               "; rebuild the plan");
    const auto shape = poolShape(ctx.layer(), x.dims());
    if (!shape) ctx.fail("the plan's pooling tactic does not apply to input shape " + dimsToString(x.dims()) +
                         "; rebuild the plan");
    HostTensor& y = ctx.allocateOutput(0);
    pooling->run(*shape, x.data<float>(), y.data<float>(), [&ctx](uint64_t bytes) { return ctx.workspace(bytes); });
  };
}

}  // namespace

void registerPoolTactics(CpuKernelRegistry& registry) {
  for (const char* opType : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
    registry.addTactic("", opType,
                       {kKilnTactic, applies, nullptr,
                        [](const Layer& l, const LayerWeights&, const Tactic&) { return cpuKernelFor(l); }});
    registry.addTactic("", opType,
                       {kOneDnnTactic, applies, oneDnnWorkspaceBytes,
                        [](const Layer&, const LayerWeights&, const Tactic& tactic) { return oneDnnKernel(tactic); },
                        /*channelsLast=*/true});
  }
}

}  // namespace kiln
