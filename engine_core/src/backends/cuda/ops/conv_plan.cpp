#include "conv_plan.h"

#include "../../../ops/fused.h"
#include "../../common/conv_geometry.h"
#include "../workspace_math.h"

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {


std::string dimsText(const std::vector<int64_t>& dims) { return dimsToString(dims); }

}  // namespace

bool isForwardConv(const Layer& layer) {
  if (layer.domain == fused::kDomain)
    return layer.opType == fused::kFusedConv && layer.attrString(fused::kBase, "") == "Conv";
  return layer.domain.empty() && layer.opType == "Conv";
}

ConvSpec convSpecOf(const Layer& layer, Precision precision, DataType outputDeclared) {
  ConvSpec s;
  const bool fusedLayer = layer.domain == fused::kDomain;
  s.base = fusedLayer ? fused::baseLayer(layer) : layer;
  s.transpose = s.base.opType == "ConvTranspose";
  s.hasBias = layer.hasInput(kConvBias);
  s.hasResidual = fusedLayer && layer.hasInput(kConvResidual);
  s.storage = storageOf(outputDeclared, precision);
  s.allowTensorOps = !(s.storage == DataType::kFloat32 && precision == Precision::kFP32);
  return s;
}

ConvPlan convPlanOf(const Layer& layer, const ConvSpec& s, const std::vector<int64_t>& x,
                    const std::vector<int64_t>& w) {
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size())
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": cuDNN convolutions take 1 to 3 spatial dims; X is " +
                                             dimsText(x) + " and W " + dimsText(w));
  const size_t rank = x.size() - 2, first = size_t(kernels::kMaxSpatialRank) - rank;
  ConvPlan p;
  ConvProblem& c = p.problem;
  c.backwardData = s.transpose;
  c.type = s.storage;
  c.allowTensorOps = s.allowTensorOps;
  c.w = w;
  const kernels::ConvShape shape = s.transpose ? transposeConvShape(s.base, x, w) : forwardConvShape(s.base, x, w);
  const kernels::SpatialWindow& win = shape.window;
  c.groups = shape.group;
  const int64_t channelsPerGroup = s.transpose ? w[0] : w[1] * shape.group;
  if (shape.group <= 0 || x[1] != channelsPerGroup || (s.transpose ? w[0] : w[0]) % shape.group != 0)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": X " + dimsText(x) + " and W " + dimsText(w) +
                                                 " do not fit group = " + std::to_string(shape.group));
  p.outputDims = {shape.batch, shape.outChannels};
  p.biasDims.assign(rank + 1, 1);
  p.biasDims[0] = shape.outChannels;
  c.x = x;
  if (!s.transpose) {
    c.y = p.outputDims;
    p.padBegin.assign(x.size(), 0);
    for (size_t i = 0; i < rank; ++i) {
      const size_t a = first + i;
      const int64_t common = std::min(win.padBegin[a], win.padEnd[a]);
      c.pads.push_back(common);
      c.strides.push_back(win.stride[a]);
      c.dilations.push_back(win.dilation[a]);
      c.y.push_back(win.out[a]);
      p.outputDims.push_back(win.out[a]);
      p.padBegin[i + 2] = win.padBegin[a] - common;
      c.x[i + 2] = x[i + 2] + (win.padBegin[a] - common) + (win.padEnd[a] - common);
      p.padInput = p.padInput || c.x[i + 2] != x[i + 2];
    }
    if (p.padInput) p.bufferBytes = uint64_t(elementCount(c.x)) * byteSize(s.storage);
  } else {
    // window: the forward convolution from the output (window.in) back to X (window.out).
    c.y = p.outputDims;
    p.cropBegin.assign(x.size(), 0);
    for (size_t i = 0; i < rank; ++i) {
      const size_t a = first + i;
      const int64_t out = win.in[a], in = win.out[a], stride = win.stride[a];
      const int64_t span = (win.kernel[a] - 1) * win.dilation[a] + 1;
      const int64_t padBegin = win.padBegin[a];
      p.outputDims.push_back(out);
      c.strides.push_back(stride);
      c.dilations.push_back(win.dilation[a]);
      const int64_t reach = out + 2 * padBegin - span;
      if (padBegin >= 0 && reach >= 0 && reach / stride + 1 == in) {  // cuDNN writes this axis directly
        c.pads.push_back(padBegin);
        c.y.push_back(out);
      } else {  // the whole result, stride·(in - 1) + span long, and the output from padBegin in it
        c.pads.push_back(0);
        c.y.push_back(stride * (in - 1) + span);
        p.cropBegin[i + 2] = -padBegin;
        p.cropOutput = true;
      }
    }
    if (p.cropOutput) p.bufferBytes = uint64_t(elementCount(c.y)) * byteSize(s.storage);
  }
  p.empty = elementCount(p.outputDims) == 0;
  return p;
}

}  // namespace kiln::cuda
