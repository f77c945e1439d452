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
  std::lock_guard lock(mutex_);
  for (auto& p : prepared_)
    if (p->hasBias == hasBias && p->shape.m == shape.m && p->shape.k == shape.k && p->shape.n == shape.n &&
        p->shape.transB == shape.transB && onednn::sameEpilogueKind(p->epilogueKind, epilogue))
      return *p;
  onednn::matchThreadCount();
  auto p = std::make_unique<Prepared>(shape, epilogue, hasBias, weightsAreConstant_);
  p->matmul = dnnl::matmul(p->pd);
  prepared_.push_back(std::move(p));
  return *prepared_.back();
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
  onednn::matchThreadCount();  // the scratchpad is sized per thread
  try {
    return Prepared(shape, epilogue, hasBias, weightsAreConstant_).pd.scratchpad_desc().get_size();
  } catch (const dnnl::error&) {
    return 0;  // no kernel for it: run() says so
  }
}

void OneDnnMatMul::run(const MatMulShape& shape, const float* a, const float* b, const float* bias,
                       const Epilogue& epilogue, float* y, const std::function<void*(uint64_t)>& workspace) {
  Prepared& p = prepared(shape, epilogue, bias != nullptr);
  onednn::matchThreadCount();
  dnnl::engine& engine = cpuEngine();
  dnnl::stream stream(engine);
  auto at = [&](const memory::desc& desc, const void* data) { return memory(desc, engine, const_cast<void*>(data)); };
  if (epilogue.residual && epilogue.residual != y)  // the sum post-op adds what Y holds
    std::memmove(y, epilogue.residual, p.y.get_size());
  memory weights = at(p.plainB, b);
  if (p.pd.weights_desc() != p.plainB) weights = packedWeights_->get(weights, p.pd.weights_desc());
  const uint64_t scratchBytes = p.pd.scratchpad_desc().get_size();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, at(p.a, a)}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, at(p.y, y)},
                                       {DNNL_ARG_SCRATCHPAD, at(p.pd.scratchpad_desc(), workspace(scratchBytes))}};
  if (bias) args.emplace(DNNL_ARG_BIAS, at(p.bias, bias));
  p.matmul.execute(stream, args);
  stream.wait();
}

}  // namespace kiln::kernels
