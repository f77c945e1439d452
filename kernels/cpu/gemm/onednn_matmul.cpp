#include "onednn_matmul.h"

#include "../common/onednn_support.h"

#include <climits>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

namespace kiln::kernels {

using dnnl::memory;
using Tag = memory::format_tag;
using onednn::cpuEngine;

bool oneDnnMatMulApplies(const MatMulShape& s) {
  return s.m > 0 && s.k > 0 && s.n > 0 && s.m * s.k <= INT_MAX && s.k * s.n <= INT_MAX && s.m * s.n <= INT_MAX;
}

struct OneDnnMatMul::Prepared {
  MatMulShape shape;
  Epilogue epilogueKind;
  bool hasBias = false;
  memory::desc a, plainB, bias, y;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;

  Prepared(const MatMulShape& s, const Epilogue& epilogue, bool withBias, bool weightsAreConstant)
      : shape(s), epilogueKind(epilogue), hasBias(withBias) {
    if (!oneDnnMatMulApplies(s)) throw std::invalid_argument("oneDNN matmul: shape out of range");
    const auto f32 = memory::data_type::f32;
    a = memory::desc({s.m, s.k}, f32, Tag::ab);
    plainB = memory::desc({s.k, s.n}, f32, s.transB ? Tag::ba : Tag::ab);
    bias = memory::desc({1, s.n}, f32, Tag::ab);
    y = memory::desc({s.m, s.n}, f32, Tag::ab);
    dnnl::primitive_attr attr;
    attr.set_post_ops(onednn::epiloguePostOps(epilogue));
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // Constant B in the layout oneDNN's kernel wants (packed once); other B as they come.
    const memory::desc b = weightsAreConstant ? memory::desc({s.k, s.n}, f32, Tag::any) : plainB;
    pd = dnnl::matmul::primitive_desc(hasBias ? dnnl::matmul::desc(a, b, bias, y) : dnnl::matmul::desc(a, b, y), attr,
                                      cpuEngine());
  }
};

OneDnnMatMul::OneDnnMatMul(bool weightsAreConstant)
    : weightsAreConstant_(weightsAreConstant), packedWeights_(std::make_unique<onednn::PackedWeights>()) {}
OneDnnMatMul::~OneDnnMatMul() = default;

OneDnnMatMul::Prepared& OneDnnMatMul::prepared(const MatMulShape& shape, const Epilogue& epilogue, bool hasBias) {
  return prepared_.findOrMake(
      [&](const Prepared& p) {
        return p.hasBias == hasBias && p.shape == shape && onednn::sameEpilogueKind(p.epilogueKind, epilogue);
      },
      [&] {
        auto p = std::make_unique<Prepared>(shape, epilogue, hasBias, weightsAreConstant_);
        p->matmul = dnnl::matmul(p->pd);
        return p;
      });
}

bool OneDnnMatMul::supports(const MatMulShape& shape) {
  if (!oneDnnMatMulApplies(shape)) return false;
  try {
    Prepared(shape, Epilogue{}, true, true);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

uint64_t OneDnnMatMul::workspaceBytes(const MatMulShape& shape, const Epilogue& epilogue, bool hasBias) const {
  return onednn::plannedBytesOrZero(
      [&] { return Prepared(shape, epilogue, hasBias, weightsAreConstant_).pd.scratchpad_desc().get_size(); });
}

void OneDnnMatMul::run(const MatMulShape& shape, const float* a, const float* b, const float* bias,
                       const Epilogue& epilogue, float* y, const std::function<void*(uint64_t)>& workspace) {
  onednn::matchThreadCount();  // before planning: oneDNN blocks its work for the team size
  Prepared& p = prepared(shape, epilogue, bias != nullptr);
  dnnl::stream stream(cpuEngine());
  if (epilogue.residual && epilogue.residual != y)  // the sum post-op adds what Y holds
    std::memmove(y, epilogue.residual, p.y.get_size());
  memory weights = onednn::wrap(p.plainB, b);
  if (p.pd.weights_desc() != p.plainB) weights = packedWeights_->get(weights, p.pd.weights_desc());
  memory scratchpad = onednn::wrap(p.pd.scratchpad_desc(), workspace(p.pd.scratchpad_desc().get_size()));
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, onednn::wrap(p.a, a)},
                                       {DNNL_ARG_WEIGHTS, weights},
                                       {DNNL_ARG_DST, onednn::wrap(p.y, y)},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad}};
  if (bias) args.emplace(DNNL_ARG_BIAS, onednn::wrap(p.bias, bias));
  p.matmul.execute(stream, args);
  stream.wait();
}

}  // namespace kiln::kernels
