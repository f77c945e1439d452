#include "host_execution.h"

#include <kiln/error.h>

#include "../ops/op_schema.h"
#include "subgraph_cache.h"

namespace kiln {
Tensor describeValue(const std::string& name, const Value& v) {
  Tensor t;
  t.name = name;
  t.kind = v.kind;
  if (v.isSequence()) {
    if (!v.sequence.empty()) {
      t.dtype = v.sequence.front().dtype();
      t.shape = Shape::fromDims(v.sequence.front().dims());
    }
  } else if (v.hasElement) {
    t.dtype = v.tensor.dtype();
    t.shape = Shape::fromDims(v.tensor.dims());
  }
  return t;
}

std::vector<Value> runLayerOnCpu(const Layer& layer, const std::vector<const Value*>& inputs, const CpuKernelFn& kernel,
                                 const SubgraphRunner& subgraphRunner,
                                 const KernelContext::OutputMemory& allocator,
                                 const Network::ScopeLookup& scopeTypes, void* workspace, uint64_t workspaceBytes,
                                 SubgraphInferenceCache* inferenceCache) {
  std::vector<Tensor> described(inputs.size());
  std::vector<const Tensor*> inferIn(inputs.size(), nullptr);
  std::vector<const HostTensor*> inferValues(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = inputs[i];
    if (!v) continue;
    described[i] = describeValue(layer.inputs[i], *v);
    inferIn[i] = &described[i];
    if (!v->isSequence() && v->hasElement) inferValues[i] = &v->tensor;
  }
  auto infer = [&] {
    InferenceContext inference(layer, inferIn, inferValues, scopeTypes);
    OpSchemaRegistry::instance().find(layer.domain, layer.opType)->infer(inference);
    return inference.outputs();
  };
  std::vector<Tensor> outputTypes = inferenceCache && hasSubgraphs(layer)
                                        ? inferenceCache->outputTypes(layer, inferIn, scopeTypes, infer)
                                        : infer();
  KernelContext ctx(layer, inputs, std::move(outputTypes), subgraphRunner);
  if (allocator) ctx.setOutputAllocator(allocator);
  ctx.setWorkspace(workspace, workspaceBytes);
  runKernel(kernel, ctx);
  for (size_t i = 0; i < layer.outputs.size(); ++i)
    if (!layer.outputs[i].empty() && ctx.outputs()[i].kind == ValueKind::kTensor && ctx.outputs()[i].tensor.empty())
      throw Error(ErrorCode::kInternal, layer.describe() + ": the kernel did not produce output " + std::to_string(i));
  return std::move(ctx.outputs());
}

}  // namespace kiln
