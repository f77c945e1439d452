#include "depthwise_conv.h"

#include "../../../ops/fused.h"
#include "../../common/conv_geometry.h"
#include "../../common/fused_epilogue.h"
#include "../cuda_precision.h"
#include "../cuda_step.h"
#include "../workspace_math.h"
#include "conv_plan.h"

#include <kernels/cuda/conv/depthwise_conv.h>
#include <kernels/cuda/layout/reformat.h>

#include <kiln/error.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

const std::string kTacticPrefix = "cuda.conv.depthwise.";

// The kernel's problem for X [N, C, H, W] and W [C, 1, KH, KW], when the layer is depthwise there.
std::optional<k::DepthwiseConv2d> problemOf(const Layer& base, const std::vector<int64_t>& x,
                                            const std::vector<int64_t>& w) {
  if (x.size() != 4 || w.size() != 4 || w[0] != x[1] || w[1] != 1 || base.attrInt("group", 1) != x[1]) return {};
  const kernels::ConvShape shape = forwardConvShape(base, x, w);
  const kernels::SpatialWindow& win = shape.window;  // 2-D: H and W at spatial indices 1 and 2
  k::DepthwiseConv2d p;
  p.batch = x[0];
  p.channels = x[1];
  p.inH = win.in[1], p.inW = win.in[2], p.outH = win.out[1], p.outW = win.out[2];
  p.kernelH = win.kernel[1], p.kernelW = win.kernel[2], p.strideH = win.stride[1], p.strideW = win.stride[2];
  p.dilationH = win.dilation[1], p.dilationW = win.dilation[2], p.padTop = win.padBegin[1], p.padLeft = win.padBegin[2];
  if (!k::depthwiseConvTakes(p)) return {};
  return p;
}

// Workspace: linear input, residual and output re-laid out channels-last (where the plan keeps them linear).
struct Layout {
  uint64_t x = 0, residual = 0, y = 0;
  uint64_t xAt() const { return 0; }
  uint64_t residualAt() const { return x; }
  uint64_t yAt() const { return x + residual; }
  uint64_t total() const { return x + residual + y; }
};

class DepthwiseConvStep : public CudaStep {
 public:
  DepthwiseConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device, storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        spec_(convSpecOf(layer, tacticPrecision(layer, tactic), outputDeclared(signature))),
        xLast_(tactic.inputFormat(kConvX) == TensorFormat::kNHWC),
        residualLast_(tactic.inputFormat(kConvResidual) == TensorFormat::kNHWC),
        yLast_(tactic.outputFormat == TensorFormat::kNHWC),
        name_(layer.describe()) {
    if (layer.domain == fused::kDomain) {
      const FusedEpilogue e = readFusedEpilogue(layer);
      epilogue_.activation = e.activation;
      epilogue_.alpha = e.alpha;
      epilogue_.beta = e.beta;
      epilogue_.residualBeforeActivation = e.residualBeforeActivation;
    }
    const HostTensor* w = weight(kConvW);
    if (!w || w->rank() != 4 || w->dim(1) != 1)
      throw Error(ErrorCode::kInvalidArgument, name_ + ": the depthwise tactic needs a constant [C, 1, KH, KW] filter");
    // fp32 taps [KH, KW, C]: a thread's channels of one tap are neighbours.
    const int64_t c = w->dim(0), kh = w->dim(2), kw = w->dim(3);
    const std::vector<double> values = w->toDoubleVector();
    std::vector<float> taps(size_t(c * kh * kw));
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t t = 0; t < kh * kw; ++t) taps[size_t(t * c + ch)] = float(values[size_t(ch * kh * kw + t)]);
    filter_ = DeviceCopy(device.allocator, taps.data(), taps.size() * sizeof(float));
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.size() < 2 || inputs[kConvX].dims.size() != 4) return 0;
    const auto p = problemOf(spec_.base, inputs[kConvX].dims, inputs[kConvW].dims);
    return p ? layoutOf(*p).total() : 0;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    if (elementCount(out.dims) == 0) return;
    const auto p = problemOf(spec_.base, args.inputs[kConvX].dims, args.inputs[kConvW].dims);
    if (!p)
      throw Error(ErrorCode::kUnsupported, name_ + ": input " + dimsToString(args.inputs[kConvX].dims) +
                                               " and filter " + dimsToString(args.inputs[kConvW].dims) +
                                               " are not a depthwise convolution the kernel takes; rebuild the plan");
    const Layout l = layoutOf(*p);
    if (args.workspaceBytes < l.total())
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(l.total()) + " it needs");
    char* workspace = static_cast<char*>(args.workspace);
    const cudaStream_t s = streamOf(stream);
    const k::ElementType type = elementType(out);
    const void* x = input(args, kConvX);
    if (l.x) {
      check(k::nchwToNhwc(x, workspace + l.xAt(), p->batch, p->channels, p->inH, p->inW, type, s),
            "re-laying out its input");
      x = workspace + l.xAt();
    }
    k::DepthwiseEpilogue e = epilogue_;
    e.bias = spec_.hasBias ? input(args, kConvBias) : nullptr;
    e.residual = spec_.hasResidual ? input(args, kConvResidual) : nullptr;
    if (l.residual) {
      check(k::nchwToNhwc(e.residual, workspace + l.residualAt(), p->batch, p->channels, p->outH, p->outW, type, s),
            "re-laying out its residual");
      e.residual = workspace + l.residualAt();
    }
    void* y = l.y ? workspace + l.yAt() : out.data;
    check(k::depthwiseConv2dChannelsLast(*p, x, static_cast<const float*>(filter_.get()), e, y, type, s));
    if (l.y)
      check(k::nhwcToNchw(y, out.data, p->batch, p->channels, p->outH, p->outW, type, s), "re-laying out its output");
  }

 private:
  Layout layoutOf(const k::DepthwiseConv2d& p) const {
    const uint64_t bytes = byteSize(spec_.storage);
    const uint64_t in = uint64_t(p.batch * p.inH * p.inW * p.channels) * bytes;
    const uint64_t out = uint64_t(p.batch * p.outH * p.outW * p.channels) * bytes;
    return {xLast_ ? 0 : alignUp(in), spec_.hasResidual && !residualLast_ ? alignUp(out) : 0, yLast_ ? 0 : alignUp(out)};
  }

  ConvSpec spec_;
  k::DepthwiseEpilogue epilogue_;
  bool xLast_, residualLast_, yLast_;
  DeviceCopy filter_;
  std::string name_;
};

}  // namespace

std::vector<Tactic> depthwiseConvTactics(const Layer& layer, Precision precision, const LayerInputs& inputs) {
  if (!isForwardConv(layer) || inputs.dims.size() <= kConvW || inputs.weights.size() <= kConvW ||
      !inputs.weights[kConvW])
    return {};
  const Layer base = layer.domain == fused::kDomain ? fused::baseLayer(layer) : layer;
  const auto p = problemOf(base, inputs.dims[kConvX], inputs.dims[kConvW]);
  if (!p) return {};
  Tactic t;
  t.id = kTacticPrefix + precisionTag(precision);
  t.takesChannelsLast = true;
  // Covers linear neighbours (the copies), whatever formats the plan gives.
  const uint64_t bytes = byteSize(storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[0], precision));
  t.workspaceBytes = alignUp(uint64_t(p->batch * p->inH * p->inW * p->channels) * bytes) +
                     2 * alignUp(uint64_t(p->batch * p->outH * p->outW * p->channels) * bytes);
  return {t};
}

bool isDepthwiseConvTactic(const std::string& tacticId) { return tacticId.rfind(kTacticPrefix, 0) == 0; }

std::unique_ptr<Step> makeDepthwiseConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                            CudaDevice& device) {
  return std::make_unique<DepthwiseConvStep>(layer, tactic, signature, device);
}

}  // namespace kiln::cuda
