#include "onednn_conv.h"

#include "../common/onednn_support.h"
#include "onednn_conv_dims.h"

#include <climits>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <unordered_map>

namespace kiln::kernels {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using onednn::cpuEngine;
using onednn::reorderBetween;
using onednn::plainActivationTag;
using onednn::plainWeightsTag;
using onednn::spatial;
using onednn::spatialRank;

}  // namespace

bool oneDnnConvApplies(const ConvShape& shape) {
  const SpatialWindow& w = shape.window;
  const int64_t elements[] = {shape.batch * shape.inChannels * w.inSize(), shape.batch * shape.outChannels * w.outSize(),
                              shape.outChannels * (shape.inChannels / shape.group) * w.kernelSize()};
  for (int64_t count : elements)
    if (count <= 0 || count > INT_MAX) return false;
  return shape.group > 0 && shape.inChannels % shape.group == 0 && shape.outChannels % shape.group == 0;
}

// One shape's primitive with the reorders around it. Memory descriptors for the caller's plain
// layouts; blocked buffers live in the workspace at the offsets below. Planning (descriptors and
// offsets) is cheap; compile() JIT-compiles the kernels.
struct OneDnnConvolution::Prepared {
  ConvShape shape;
  Epilogue epilogueKind;
  bool hasBias = false;
  memory::desc plainSrc, plainDst, plainResidual, plainWeights, bias;  // the caller's layouts
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward conv;
  std::optional<dnnl::reorder> srcIn, dstOut, residualIn, weightsIn;
  uint64_t srcOffset = 0, dstOffset = 0, residualOffset = 0, weightsOffset = 0, scratchOffset = 0, workspaceBytes = 0;

  Prepared(const ConvShape& shape, const Epilogue& epilogue, bool hasBias, bool weightsAreConstant,
           const ActivationLayouts& layouts);
  void compile();

};

OneDnnConvolution::Prepared::Prepared(const ConvShape& convShape, const Epilogue& epilogue, bool withBias,
                                      bool weightsAreConstant, const ActivationLayouts& layouts)
    : shape(convShape), epilogueKind(epilogue), hasBias(withBias) {
  if (!oneDnnConvApplies(shape)) throw std::invalid_argument("oneDNN convolution: shape out of range");
  const SpatialWindow& w = shape.window;
  const int rank = spatialRank(shape);
  const bool grouped = shape.group > 1;
  const auto f32 = memory::data_type::f32;

  const auto [src, dst, weights] = onednn::convDims(shape, rank);

  plainSrc = memory::desc(src, f32, plainActivationTag(rank, layouts.xChannelsLast));
  plainDst = memory::desc(dst, f32, plainActivationTag(rank, layouts.yChannelsLast));
  plainResidual = memory::desc(dst, f32, plainActivationTag(rank, layouts.residualChannelsLast));
  plainWeights = memory::desc(weights, f32, plainWeightsTag(rank, grouped));
  bias = memory::desc({shape.outChannels}, f32, Tag::x);

  dnnl::primitive_attr attr;
  attr.set_post_ops(onednn::epiloguePostOps(epilogue));
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

  // Layouts left to oneDNN (format any): it picks the blocked ones its fastest kernel wants.
  const memory::desc anySrc(src, f32, Tag::any), anyWeights(weights, f32, Tag::any), anyDst(dst, f32, Tag::any);
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto direct = dnnl::algorithm::convolution_direct;
  const auto strides = spatial(w.stride, rank), dilates = spatial(w.dilation, rank, 1);
  const auto padL = spatial(w.padBegin, rank), padR = spatial(w.padEnd, rank);
  pd = dnnl::convolution_forward::primitive_desc(
      hasBias ? dnnl::convolution_forward::desc(kind, direct, anySrc, anyWeights, bias, anyDst, strides, dilates, padL, padR)
              : dnnl::convolution_forward::desc(kind, direct, anySrc, anyWeights, anyDst, strides, dilates, padL, padR),
      attr, cpuEngine());

  onednn::ScratchLayout scratch;
  if (pd.src_desc() != plainSrc) srcOffset = scratch.add(pd.src_desc().get_size());
  if (pd.dst_desc() != plainDst) dstOffset = scratch.add(pd.dst_desc().get_size());
  // A residual laid out unlike Y itself is re-laid out beside it first (Y may share its memory).
  if (epilogue.residual && pd.dst_desc() == plainDst && plainResidual != plainDst)
    residualOffset = scratch.add(plainDst.get_size());
  if (pd.weights_desc() != plainWeights && !weightsAreConstant)
    weightsOffset = scratch.add(pd.weights_desc().get_size());
  scratchOffset = scratch.add(pd.scratchpad_desc().get_size());
  workspaceBytes = scratch.total();
}

void OneDnnConvolution::Prepared::compile() {
  conv = dnnl::convolution_forward(pd);
  if (pd.src_desc() != plainSrc) srcIn = reorderBetween(plainSrc, pd.src_desc());
  if (pd.dst_desc() != plainDst) dstOut = reorderBetween(pd.dst_desc(), plainDst);
  if (epilogueKind.residual && plainResidual != pd.dst_desc()) residualIn = reorderBetween(plainResidual, pd.dst_desc());
  if (pd.weights_desc() != plainWeights) weightsIn = reorderBetween(plainWeights, pd.weights_desc());
}

OneDnnConvolution::OneDnnConvolution(bool weightsAreConstant, ActivationLayouts layouts)
    : weightsAreConstant_(weightsAreConstant),
      layouts_(layouts),
      packedWeights_(std::make_unique<onednn::PackedWeights>()) {}
OneDnnConvolution::~OneDnnConvolution() = default;

OneDnnConvolution::Prepared& OneDnnConvolution::prepared(const ConvShape& shape, const Epilogue& epilogue,
                                                          bool hasBias) {
  return prepared_.findOrMake(
      [&](const Prepared& p) {
        return p.hasBias == hasBias && p.shape == shape && onednn::sameEpilogueKind(p.epilogueKind, epilogue);
      },
      [&] {
        auto p = std::make_unique<Prepared>(shape, epilogue, hasBias, weightsAreConstant_, layouts_);
        p->compile();
        return p;
      });
}

bool OneDnnConvolution::supports(const ConvShape& shape) {
  if (!oneDnnConvApplies(shape)) return false;
  try {
    Prepared(shape, Epilogue{}, true, true, ActivationLayouts{});
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

uint64_t OneDnnConvolution::workspaceBytes(const ConvShape& shape, const Epilogue& epilogue, bool hasBias) const {
  return onednn::plannedBytesOrZero(
      [&] { return Prepared(shape, epilogue, hasBias, weightsAreConstant_, layouts_).workspaceBytes; });
}

void OneDnnConvolution::run(const ConvShape& shape, const float* x, const float* w, const float* bias,
                            const Epilogue& epilogue, float* y, const std::function<void*(uint64_t)>& workspace) {
  onednn::matchThreadCount();  // before planning: oneDNN blocks its work for the team size
  Prepared& p = prepared(shape, epilogue, bias != nullptr);
  dnnl::stream stream(cpuEngine());
  char* scratch = static_cast<char*>(workspace(p.workspaceBytes));

  memory src = onednn::wrap(p.plainSrc, x);
  if (p.srcIn) {
    memory blocked = onednn::wrap(p.pd.src_desc(), scratch + p.srcOffset);
    p.srcIn->execute(stream, src, blocked);
    src = blocked;
  }
  memory plainDst = onednn::wrap(p.plainDst, y);
  memory dst = p.dstOut ? onednn::wrap(p.pd.dst_desc(), scratch + p.dstOffset) : plainDst;
  if (epilogue.residual) {  // the sum post-op adds what dst holds
    memory residual = onednn::wrap(p.plainResidual, epilogue.residual);
    if (p.residualIn && p.dstOut) {
      p.residualIn->execute(stream, residual, dst);
    } else if (p.residualIn) {  // into Y's own layout, staged: Y may share the residual's memory
      memory staged = onednn::wrap(p.plainDst, scratch + p.residualOffset);
      p.residualIn->execute(stream, residual, staged);
      std::memcpy(y, staged.get_data_handle(), p.plainDst.get_size());
    } else if (epilogue.residual != dst.get_data_handle()) {  // already in dst's layout
      std::memcpy(dst.get_data_handle(), epilogue.residual, p.pd.dst_desc().get_size());
    }
  }
  memory weights = onednn::wrap(p.plainWeights, w);
  if (p.weightsIn && weightsAreConstant_) {
    weights = packedWeights_->get(weights, p.pd.weights_desc());
  } else if (p.weightsIn) {
    memory blocked = onednn::wrap(p.pd.weights_desc(), scratch + p.weightsOffset);
    p.weightsIn->execute(stream, weights, blocked);
    weights = blocked;
  }
  memory scratchpad = onednn::wrap(p.pd.scratchpad_desc(), scratch + p.scratchOffset);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad}};
  if (bias) args.emplace(DNNL_ARG_BIAS, onednn::wrap(p.bias, bias));
  p.conv.execute(stream, args);
  if (p.dstOut) p.dstOut->execute(stream, dst, plainDst);
  stream.wait();
}

}  // namespace kiln::kernels
