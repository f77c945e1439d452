#include "cuda_ops.h"

#include <algorithm>
#include <cctype>

namespace kiln::cuda {

const CudaOpRegistry& CudaOpRegistry::instance() {
  static const CudaOpRegistry registry = [] {
    CudaOpRegistry r;
#define KILN_REGISTER_CUDA_FAMILY(Family) register##Family##CudaOps(r);
    KILN_CUDA_OP_FAMILIES(KILN_REGISTER_CUDA_FAMILY)
#undef KILN_REGISTER_CUDA_FAMILY
    return r;
  }();
  return registry;
}

std::string defaultTacticId(const Layer& layer) {
  std::string id = "cuda." + (layer.domain.empty() ? "" : layer.domain + ".") + layer.opType;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return id;
}

namespace {
template <class Fn>
SupportVerdict forEachTensor(const LayerSignature& tensors, bool weightsToo, Fn&& fn) {
  for (const Tensor* t : tensors.inputs)
    if (t && (weightsToo || !t->isConstant()))
      if (auto v = fn(*t); !v.supported) return v;
  for (const Tensor* t : tensors.outputs)
    if (t)
      if (auto v = fn(*t); !v.supported) return v;
  return {};
}
}  // namespace

SupportVerdict allOfTypes(const LayerSignature& tensors, std::initializer_list<DataType> types, bool weightsToo) {
  return forEachTensor(tensors, weightsToo, [&](const Tensor& t) -> SupportVerdict {
    if (std::find(types.begin(), types.end(), t.dtype) != types.end()) return {};
    return {false, "no CUDA kernel for " + std::string(toString(t.dtype)) + " tensor '" + t.name + "'"};
  });
}

SupportVerdict ranksWithinLimit(const LayerSignature& tensors) {
  return forEachTensor(tensors, true, [&](const Tensor& t) -> SupportVerdict {
    if (t.kind != ValueKind::kTensor) return {false, "'" + t.name + "' is not a tensor"};
    if (!t.shape.hasRank() || t.shape.rank() <= 8) return {};
    return {false, "tensor '" + t.name + "' has rank " + std::to_string(t.shape.rank()) +
                       "; the CUDA kernels take up to 8"};
  });
}

SupportVerdict firstRefusal(std::initializer_list<SupportVerdict> verdicts) {
  for (const auto& v : verdicts)
    if (!v.supported) return v;
  return {};
}

}  // namespace kiln::cuda
