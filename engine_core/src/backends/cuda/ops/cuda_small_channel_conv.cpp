#include "small_channel_conv.h"

#include "../../../ops/conv_pool_window.h"
#include "../../../ops/fused.h"
#include "../../common/conv_geometry.h"
#include "../../common/fused_epilogue.h"
#include "../cuda_precision.h"
#include "../cuda_step.h"
#include "conv_plan.h"

#include <kernels/cuda/conv/small_channel_conv.h>

#include <kiln/error.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

const std::string kTacticPrefix = "kiln.conv.smallc.";

bool isConvPool(const Layer& layer) { return layer.domain == fused::kDomain && layer.opType == fused::kFusedConvPool; }

// The convolution of a layer: a FusedConvPool's FusedConv, else the layer.
Layer convPartOf(const Layer& layer) { return isConvPool(layer) ? fused::convOfConvPool(layer) : layer; }

// The kernel's problem for X [N, C, H, W] and W [K, C, KH, KW] (group 1, 2-D) in `storage`, with
// `pool`'s window (a MaxPool without dilation) when given, or nothing where the layer is not one
// the kernel takes.
std::optional<k::SmallChannelConvProblem> problemOf(const Layer& base, const std::vector<int64_t>& x,
                                                    const std::vector<int64_t>& w, DataType storage,
                                                    const std::optional<Layer>& pool) {
  if (x.size() != 4 || w.size() != 4 || w[1] != x[1] || base.attrInt("group", 1) != 1) return {};
  if (storage != DataType::kFloat16 && storage != DataType::kBFloat16) return {};
  const kernels::ConvShape shape = forwardConvShape(base, x, w);
  const kernels::SpatialWindow& win = shape.window;  // 2-D: H and W at spatial indices 1 and 2
  k::SmallChannelConvProblem p;
  p.batch = x[0], p.channels = x[1], p.outChannels = w[0];
  p.inH = win.in[1], p.inW = win.in[2], p.outH = win.out[1], p.outW = win.out[2];
  p.kernelH = win.kernel[1], p.kernelW = win.kernel[2], p.strideH = win.stride[1], p.strideW = win.stride[2];
  p.dilationH = win.dilation[1], p.dilationW = win.dilation[2], p.padTop = win.padBegin[1], p.padLeft = win.padBegin[2];
  p.type = storage == DataType::kFloat16 ? k::ElementType::kFloat16 : k::ElementType::kBFloat16;
  if (pool) {
    const kernels::SpatialWindow pw = makeSpatialWindow(*pool, readWindowAttributes(*pool, 2), {p.outH, p.outW});
    if (pw.dilation[1] != 1 || pw.dilation[2] != 1) return {};
    k::FusedMaxPool q;
    q.kernelH = pw.kernel[1], q.kernelW = pw.kernel[2], q.strideH = pw.stride[1], q.strideW = pw.stride[2];
    q.padTop = pw.padBegin[1], q.padLeft = pw.padBegin[2], q.outH = pw.out[1], q.outW = pw.out[2];
    p.pool = q;
  }
  if (k::smallChannelConvRefusal(p)) return {};
  return p;
}

class SmallChannelConvStep : public CudaStep {
 public:
  SmallChannelConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device,
                 storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        spec_(convSpecOf(convPartOf(layer), tacticPrecision(layer, tactic), outputDeclared(signature))),
        xLast_(tactic.inputFormat(kConvX) == TensorFormat::kNHWC),
        yLast_(tactic.outputFormat == TensorFormat::kNHWC),
        name_(layer.describe()) {
    if (isConvPool(layer)) pool_ = fused::poolOfConvPool(layer);
    if (layer.domain == fused::kDomain) {
      const FusedEpilogue e = readFusedEpilogue(layer);
      activation_ = e.activation, alpha_ = e.alpha, beta_ = e.beta;
    }
    if (spec_.hasResidual)
      throw Error(ErrorCode::kInvalidArgument, name_ + ": the small-channel tactic takes no residual");
    const HostTensor* w = weight(kConvW);
    if (!w || w->rank() != 4)
      throw Error(ErrorCode::kInvalidArgument,
                  name_ + ": the small-channel tactic needs a constant [K, C, KH, KW] filter");
    // fp32 [K, C, KH, KW] as ONNX has it: the kernel rounds it to the tensors' type in shared memory.
    const std::vector<double> values = w->toDoubleVector();
    const std::vector<float> filter(values.begin(), values.end());
    filter_ = DeviceCopy(device.allocator, filter.data(), filter.size() * sizeof(float));
  }

  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override { return 0; }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    if (elementCount(out.dims) == 0) return;
    auto p = problemOf(spec_.base, args.inputs[kConvX].dims, args.inputs[kConvW].dims, spec_.storage, pool_);
    if (!p)
      throw Error(ErrorCode::kUnsupported,
                  name_ + ": input " + dimsToString(args.inputs[kConvX].dims) + " and filter " +
                      dimsToString(args.inputs[kConvW].dims) +
                      " are not a convolution the small-channel kernel takes; rebuild the plan");
    p->xChannelsLast = xLast_, p->yChannelsLast = yLast_;
    p->activation = activation_, p->alpha = alpha_, p->beta = beta_;
    const void* bias = spec_.hasBias ? input(args, kConvBias) : nullptr;
    check(k::smallChannelConv(*p, input(args, kConvX), static_cast<const float*>(filter_.get()), bias, out.data,
                              streamOf(stream)));
  }

 private:
  ConvSpec spec_;
  std::optional<Layer> pool_;  // a FusedConvPool's MaxPool
  bool xLast_, yLast_;
  kernels::Activation activation_ = kernels::Activation::kNone;
  float alpha_ = 0, beta_ = 0;
  DeviceCopy filter_;
  std::string name_;
};

}  // namespace

std::vector<Tactic> smallChannelConvTactics(const Layer& layer, Precision precision, const LayerInputs& inputs) {
  if (!isForwardConv(convPartOf(layer)) || inputs.dims.size() <= kConvW || inputs.weights.size() <= kConvW ||
      !inputs.weights[kConvW])
    return {};
  if (layer.hasInput(kConvResidual)) return {};  // the kernel fuses no residual
  const Layer conv = convPartOf(layer);
  const Layer base = conv.domain == fused::kDomain ? fused::baseLayer(conv) : conv;
  const DataType storage = storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[0], precision);
  const std::optional<Layer> pool = isConvPool(layer) ? std::optional(fused::poolOfConvPool(layer)) : std::nullopt;
  if (!problemOf(base, inputs.dims[kConvX], inputs.dims[kConvW], storage, pool)) return {};
  Tactic t;
  t.id = kTacticPrefix + precisionTag(precision);
  t.takesChannelsLast = true;
  return {t};
}

bool isSmallChannelConvTactic(const std::string& tacticId) { return tacticId.rfind(kTacticPrefix, 0) == 0; }

std::unique_ptr<Step> makeSmallChannelConvStep(const Layer& layer, const Tactic& tactic,
                                               const LayerSignature& signature, CudaDevice& device) {
  return std::make_unique<SmallChannelConvStep>(layer, tactic, signature, device);
}

}  // namespace kiln::cuda
