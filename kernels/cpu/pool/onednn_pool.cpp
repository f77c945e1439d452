#include "onednn_pool.h"

#include "../common/onednn_support.h"

#include <climits>
#include <optional>
#include <stdexcept>
#include <unordered_map>

namespace kiln::kernels {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using onednn::cpuEngine;
using onednn::reorderBetween;

// The right padding oneDNN needs for the output size (ceil mode can ask for more than ONNX's pads).
int64_t rightPadding(const SpatialWindow& w, int axis) {
  return (w.out[axis] - 1) * w.stride[axis] + (w.kernel[axis] - 1) * w.dilation[axis] + 1 - w.in[axis] -
         w.padBegin[axis];
}

}  // namespace

struct OneDnnPooling::Prepared {
  PoolShape shape;
  memory::desc plainX, plainY, workX, workY;  // the caller's layouts and the primitive's (NHWC)
  dnnl::pooling_v2_forward::primitive_desc pd;
  dnnl::pooling_v2_forward pool;
  std::optional<dnnl::reorder> xIn, yOut;
  uint64_t xOffset = 0, yOffset = 0, scratchOffset = 0, workspaceBytes = 0;

  Prepared(const PoolShape& s, bool xChannelsLast, bool yChannelsLast) : shape(s) {
    const SpatialWindow& w = s.window;
    if (w.in[0] != 1 || w.out[0] != 1 || w.kernel[0] != 1)
      throw std::invalid_argument("oneDNN pooling: 2-D pools only");
    const auto f32 = memory::data_type::f32;
    const memory::dims src{s.batch, s.channels, w.in[1], w.in[2]}, dst{s.batch, s.channels, w.out[1], w.out[2]};
    plainX = memory::desc(src, f32, xChannelsLast ? Tag::nhwc : Tag::nchw);
    plainY = memory::desc(dst, f32, yChannelsLast ? Tag::nhwc : Tag::nchw);
    workX = memory::desc(src, f32, Tag::nhwc);
    workY = memory::desc(dst, f32, Tag::nhwc);
    const auto algorithm = s.kind == PoolKind::kMax                       ? dnnl::algorithm::pooling_max
                           : s.kind == PoolKind::kAverageIncludingPadding ? dnnl::algorithm::pooling_avg_include_padding
                                                                          : dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    pd = dnnl::pooling_v2_forward::primitive_desc(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, algorithm, workX, workY,
                                       {w.stride[1], w.stride[2]}, {w.kernel[1], w.kernel[2]},
                                       {w.dilation[1] - 1, w.dilation[2] - 1}, {w.padBegin[1], w.padBegin[2]},
                                       {rightPadding(w, 1), rightPadding(w, 2)}),
        attr, cpuEngine());
    onednn::ScratchLayout scratch;
    if (plainX != workX) xOffset = scratch.add(workX.get_size());
    if (plainY != workY) yOffset = scratch.add(workY.get_size());
    scratchOffset = scratch.add(pd.scratchpad_desc().get_size());
    workspaceBytes = scratch.total();
  }

  void compile() {
    pool = dnnl::pooling_v2_forward(pd);
    if (plainX != workX) xIn = reorderBetween(plainX, workX);
    if (plainY != workY) yOut = reorderBetween(workY, plainY);
  }
};

OneDnnPooling::OneDnnPooling(bool xChannelsLast, bool yChannelsLast)
    : xChannelsLast_(xChannelsLast), yChannelsLast_(yChannelsLast) {}
OneDnnPooling::~OneDnnPooling() = default;

bool OneDnnPooling::supports(const PoolShape& shape) {
  const SpatialWindow& w = shape.window;
  if (shape.batch <= 0 || shape.channels <= 0 || w.in[0] != 1 || w.out[0] != 1 || w.kernel[0] != 1) return false;
  if (shape.batch * shape.channels * w.inSize() > INT_MAX) return false;
  for (int axis = 1; axis < kMaxSpatialRank; ++axis)
    if (rightPadding(w, axis) < 0 ||
        (shape.kind == PoolKind::kAverageIncludingPadding && rightPadding(w, axis) != w.padEnd[axis]))
      return false;
  try {
    Prepared(shape, false, false);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

uint64_t OneDnnPooling::workspaceBytes(const PoolShape& shape) const {
  return onednn::plannedBytesOrZero([&] { return Prepared(shape, xChannelsLast_, yChannelsLast_).workspaceBytes; });
}

OneDnnPooling::Prepared& OneDnnPooling::prepared(const PoolShape& shape) {
  return prepared_.findOrMake([&](const Prepared& p) { return p.shape == shape; },
                              [&] {
                                auto p = std::make_unique<Prepared>(shape, xChannelsLast_, yChannelsLast_);
                                p->compile();
                                return p;
                              });
}

void OneDnnPooling::run(const PoolShape& shape, const float* x, float* y,
                        const std::function<void*(uint64_t)>& workspace) {
  onednn::matchThreadCount();  // before planning: oneDNN blocks its work for the team size
  Prepared& p = prepared(shape);
  dnnl::stream stream(cpuEngine());
  char* scratch = static_cast<char*>(workspace(p.workspaceBytes));
  memory src = onednn::wrap(p.plainX, x);
  if (p.xIn) {
    memory work = onednn::wrap(p.workX, scratch + p.xOffset);
    p.xIn->execute(stream, src, work);
    src = work;
  }
  memory plainDst = onednn::wrap(p.plainY, y);
  memory dst = p.yOut ? onednn::wrap(p.workY, scratch + p.yOffset) : plainDst;
  p.pool.execute(stream, {{DNNL_ARG_SRC, src},
                          {DNNL_ARG_DST, dst},
                          {DNNL_ARG_SCRATCHPAD, onednn::wrap(p.pd.scratchpad_desc(), scratch + p.scratchOffset)}});
  if (p.yOut) p.yOut->execute(stream, dst, plainDst);
  stream.wait();
}

}  // namespace kiln::kernels
