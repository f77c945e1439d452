#include "onednn_support.h"

#include "onednn.h"
#include "parallel.h"

#include <omp.h>

#include <stdexcept>

namespace kiln::kernels {

std::string oneDnnDescription() {
  const dnnl_version_t* v = dnnl_version();
  std::string isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: isa = "sse41"; break;
    case dnnl::cpu_isa::avx: isa = "avx"; break;
    case dnnl::cpu_isa::avx2: isa = "avx2"; break;
    case dnnl::cpu_isa::avx512_core: isa = "avx512_core"; break;
    case dnnl::cpu_isa::avx512_core_vnni: isa = "avx512_core_vnni"; break;
    case dnnl::cpu_isa::avx512_core_bf16: isa = "avx512_core_bf16"; break;
    case dnnl::cpu_isa::avx512_core_amx: isa = "avx512_core_amx"; break;
    default: isa = "isa " + std::to_string(int(dnnl::get_effective_cpu_isa()));
  }
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
         ", " + isa;
}

namespace onednn {
namespace {

void appendActivation(dnnl::post_ops& ops, const Epilogue& e) {
  using dnnl::algorithm;
  switch (e.activation) {
    case Activation::kNone: return;
    case Activation::kRelu: ops.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f); return;
    case Activation::kLeakyRelu: ops.append_eltwise(1.f, algorithm::eltwise_relu, e.alpha, 0.f); return;
    case Activation::kClip: ops.append_eltwise(1.f, algorithm::eltwise_clip_v2, e.alpha, e.beta); return;
    case Activation::kSigmoid: ops.append_eltwise(1.f, algorithm::eltwise_logistic, 0.f, 0.f); return;
    case Activation::kHardSigmoid:  // max(0, min(1, alpha x + beta))
      ops.append_eltwise(1.f, algorithm::eltwise_linear, e.alpha, e.beta);
      ops.append_eltwise(1.f, algorithm::eltwise_clip_v2, 0.f, 1.f);
      return;
    case Activation::kHardSwish: ops.append_eltwise(1.f, algorithm::eltwise_hardswish, 0.f, 0.f); return;
    case Activation::kSiLU: ops.append_eltwise(1.f, algorithm::eltwise_swish, 1.f, 0.f); return;
    case Activation::kGelu: ops.append_eltwise(1.f, algorithm::eltwise_gelu_erf, 0.f, 0.f); return;
    case Activation::kGeluTanh: ops.append_eltwise(1.f, algorithm::eltwise_gelu_tanh, 0.f, 0.f); return;
    case Activation::kTanh: ops.append_eltwise(1.f, algorithm::eltwise_tanh, 0.f, 0.f); return;
  }
  throw std::invalid_argument("oneDNN: unknown activation");
}

}  // namespace

dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void matchThreadCount() {
  const int threads = cpuThreadCount();
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

dnnl::post_ops epiloguePostOps(const Epilogue& epilogue) {
  dnnl::post_ops ops;
  if (epilogue.residual && epilogue.residualBeforeActivation) ops.append_sum(1.f);
  appendActivation(ops, epilogue);
  if (epilogue.residual && !epilogue.residualBeforeActivation) ops.append_sum(1.f);
  return ops;
}

bool sameEpilogueKind(const Epilogue& a, const Epilogue& b) {
  return a.activation == b.activation && a.alpha == b.alpha && a.beta == b.beta &&
         (a.residual != nullptr) == (b.residual != nullptr) && a.residualBeforeActivation == b.residualBeforeActivation;
}

dnnl::memory PackedWeights::get(const dnnl::memory& plain, const dnnl::memory::desc& packed) {
  std::lock_guard lock(mutex_);
  for (const dnnl::memory& m : packed_)
    if (m.get_desc() == packed) return m;
  dnnl::memory made(packed, cpuEngine());
  dnnl::stream stream(cpuEngine());
  dnnl::reorder(plain, made).execute(stream, const_cast<dnnl::memory&>(plain), made);
  stream.wait();
  packed_.push_back(made);
  return made;
}

}  // namespace onednn
}  // namespace kiln::kernels
