#include "backend.h"

#include "../runtime/subgraph_cache.h"

namespace kiln {

LayerWeights LayerSignature::weights() const {
  LayerWeights out;
  for (const Tensor* t : inputs) out.push_back(t && t->isConstant() ? &*t->constant : nullptr);
  return out;
}

LayerSignature layerSignature(const Network& network, const Layer& layer) {
  LayerSignature s;
  for (const auto& name : layer.inputs) s.inputs.push_back(name.empty() ? nullptr : network.findTensor(name));
  for (const auto& name : layer.outputs) s.outputs.push_back(name.empty() ? nullptr : network.findTensor(name));
  for (const auto& name : subgraphReferences(layer)) s.outerReads.push_back(network.findTensor(name));
  return s;
}

int64_t TensorView::elementCount() const { return kiln::elementCount(dims); }

uint64_t TensorView::byteSize() const { return uint64_t(elementCount()) * kiln::byteSize(dtype); }

}  // namespace kiln
