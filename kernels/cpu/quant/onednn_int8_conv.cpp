#include "../common/onednn_support.h"
#include "../conv/onednn_conv.h"
#include "../conv/onednn_conv_dims.h"
#include "onednn_int8.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace kiln::kernels {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using onednn::cpuEngine;
using onednn::reorderBetween;

memory::data_type sourceType(Int8Source source) {
  return source == Int8Source::kUnsigned ? memory::data_type::u8 : memory::data_type::s8;
}

}  // namespace

// One shape's primitive with the reorders around it (blocked buffers in the workspace at the
// offsets below), as OneDnnConvolution::Prepared; `ok` false when oneDNN has no JIT kernel for it.
struct OneDnnInt8Convolution::Prepared {
  ConvShape shape;
  Int8Source source = Int8Source::kSigned;
  bool zeroPoint = false;
  bool ok = false;
  memory::desc plainSrc, plainDst, plainWeights, zeroDesc;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward conv;
  std::optional<dnnl::reorder> srcIn, dstOut, weightsIn;
  uint64_t srcOffset = 0, dstOffset = 0, weightsOffset = 0, scratchOffset = 0, workspaceBytes = 0;

  Prepared(const ConvShape& convShape, Int8Source src, bool withZeroPoint, bool weightsAreConstant)
      : shape(convShape), source(src), zeroPoint(withZeroPoint) {
    if (!oneDnnConvApplies(shape)) return;
    try {
      plan(weightsAreConstant);
      ok = true;
    } catch (const dnnl::error&) {        // no kernel for these types, layouts or attributes
    } catch (const std::domain_error&) {  // only oneDNN's reference loops
    }
  }

  void plan(bool weightsAreConstant) {
    const int rank = onednn::spatialRank(shape);
    const auto [src, dst, weights] = onednn::convDims(shape, rank);
    const auto s8 = memory::data_type::s8, s32 = memory::data_type::s32;
    plainSrc = memory::desc(src, sourceType(source), onednn::plainActivationTag(rank, false));
    plainDst = memory::desc(dst, s32, onednn::plainActivationTag(rank, false));
    plainWeights = memory::desc(weights, s8, onednn::plainWeightsTag(rank, shape.group > 1));
    zeroDesc = memory::desc({1}, s32, Tag::x);

    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // oneDNN subtracts the zero point inside (weights re-laid out with their sums); padding then
    // adds nothing, as in the reference, where the padded values are centered zeros.
    if (zeroPoint) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    const SpatialWindow& w = shape.window;
    const memory::desc anySrc(src, sourceType(source), Tag::any), anyWeights(weights, s8, Tag::any),
        anyDst(dst, s32, Tag::any);
    pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, anySrc,
                                        anyWeights, anyDst, onednn::spatial(w.stride, rank),
                                        onednn::spatial(w.dilation, rank, 1), onednn::spatial(w.padBegin, rank),
                                        onednn::spatial(w.padEnd, rank)),
        attr, cpuEngine());
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) throw std::domain_error("reference kernel");

    onednn::ScratchLayout scratch;
    if (pd.src_desc() != plainSrc) srcOffset = scratch.add(pd.src_desc().get_size());
    if (pd.dst_desc() != plainDst) dstOffset = scratch.add(pd.dst_desc().get_size());
    if (pd.weights_desc() != plainWeights && !weightsAreConstant)
      weightsOffset = scratch.add(pd.weights_desc().get_size());
    scratchOffset = scratch.add(pd.scratchpad_desc().get_size());
    workspaceBytes = scratch.total();
  }

  void compile() {
    if (!ok) return;
    conv = dnnl::convolution_forward(pd);
    if (pd.src_desc() != plainSrc) srcIn = reorderBetween(plainSrc, pd.src_desc());
    if (pd.dst_desc() != plainDst) dstOut = reorderBetween(pd.dst_desc(), plainDst);
    if (pd.weights_desc() != plainWeights) weightsIn = reorderBetween(plainWeights, pd.weights_desc());
  }
};

OneDnnInt8Convolution::OneDnnInt8Convolution(bool weightsAreConstant)
    : weightsAreConstant_(weightsAreConstant), packedWeights_(std::make_unique<onednn::PackedWeights>()) {}
OneDnnInt8Convolution::~OneDnnInt8Convolution() = default;

OneDnnInt8Convolution::Prepared* OneDnnInt8Convolution::prepared(const ConvShape& shape, Int8Source source,
                                                                 bool zeroPoint) {
  onednn::matchThreadCount();  // before planning: oneDNN blocks its work for the team size
  Prepared& p = prepared_.findOrMake(
      [&](const Prepared& q) { return q.shape == shape && q.source == source && q.zeroPoint == zeroPoint; },
      [&] {
        auto q = std::make_unique<Prepared>(shape, source, zeroPoint, weightsAreConstant_);
        q->compile();
        return q;
      });
  return p.ok ? &p : nullptr;
}

std::optional<uint64_t> OneDnnInt8Convolution::prepare(const ConvShape& shape, Int8Source source, bool zeroPoint) {
  if (!oneDnnInt8Exact() || shape.group <= 0 ||
      !int8SumsFitInt32((shape.inChannels / shape.group) * shape.window.kernelSize()))
    return std::nullopt;
  const Prepared* p = prepared(shape, source, zeroPoint);
  if (!p) return std::nullopt;
  return p->workspaceBytes;
}

std::optional<uint64_t> OneDnnInt8Convolution::workspaceBytes(const ConvShape& shape, Int8Source source,
                                                              bool zeroPoint) const {
  if (!oneDnnInt8Exact()) return std::nullopt;
  onednn::matchThreadCount();  // scratchpads are sized per thread
  const Prepared p(shape, source, zeroPoint, weightsAreConstant_);
  if (!p.ok) return std::nullopt;
  return p.workspaceBytes;
}

void OneDnnInt8Convolution::run(const ConvShape& shape, const void* x, Int8Source source, int32_t zero, const int8_t* w,
                                int32_t* acc, const std::function<void*(uint64_t)>& workspace) {
  Prepared* p = prepare(shape, source, zero != 0) ? prepared(shape, source, zero != 0) : nullptr;
  if (!p) throw std::invalid_argument("oneDNN has no exact int8 convolution for this shape");
  dnnl::stream stream(cpuEngine());
  char* scratch = static_cast<char*>(workspace(p->workspaceBytes));

  memory src = onednn::wrap(p->plainSrc, x);
  if (p->srcIn) {
    memory blocked = onednn::wrap(p->pd.src_desc(), scratch + p->srcOffset);
    p->srcIn->execute(stream, src, blocked);
    src = blocked;
  }
  memory plainDst = onednn::wrap(p->plainDst, acc);
  memory dst = p->dstOut ? onednn::wrap(p->pd.dst_desc(), scratch + p->dstOffset) : plainDst;
  memory weights = onednn::wrap(p->plainWeights, w);
  if (p->weightsIn && weightsAreConstant_) {
    weights = packedWeights_->get(weights, p->pd.weights_desc());
  } else if (p->weightsIn) {
    memory blocked = onednn::wrap(p->pd.weights_desc(), scratch + p->weightsOffset);
    p->weightsIn->execute(stream, weights, blocked);
    weights = blocked;
  }
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src},
      {DNNL_ARG_WEIGHTS, weights},
      {DNNL_ARG_DST, dst},
      {DNNL_ARG_SCRATCHPAD, onednn::wrap(p->pd.scratchpad_desc(), scratch + p->scratchOffset)}};
  if (p->zeroPoint) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, onednn::wrap(p->zeroDesc, &zero));
  p->conv.execute(stream, args);
  if (p->dstOut) p->dstOut->execute(stream, dst, plainDst);
  stream.wait();
}

}  // namespace kiln::kernels
