#include "layer_runner.h"

#include <kiln/error.h>

#include "../builder/engine_description.h"
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

namespace {

// The activations the engine keeps in a non-linear layout.
std::unordered_map<std::string, TensorFormat> engineTensorFormats(const Backend& backend, const EngineDescription& d) {
  std::vector<std::string> tactics;
  std::vector<Precision> precisions;
  for (const LayerDecision& decision : d.decisions) {
    tactics.push_back(decision.tactic);
    precisions.push_back(decision.precision);
  }
  return backend.tensorFormats(*d.network, tactics, precisions);
}

}  // namespace

const CpuKernelFn& cpuKernelFor(const Layer& layer) {
  const CpuKernelFn* kernel = CpuKernelRegistry::instance().find(layer.domain, layer.opType);
  if (!kernel || !OpSchemaRegistry::instance().find(layer.domain, layer.opType))
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": op '" + layer.opType + "' (domain '" +
                                             (layer.domain.empty() ? "ai.onnx" : layer.domain) +
                                             "') is not supported by the CPU backend");
  return *kernel;
}

std::vector<std::shared_ptr<const Step>> instantiateSteps(const Backend& backend, const EngineDescription& d) {
  const Network& net = *d.network;
  const auto formats = engineTensorFormats(backend, d);
  auto formatOf = [&](const std::string& tensor) {
    auto it = formats.find(tensor);
    return it == formats.end() ? TensorFormat::kLinear : it->second;
  };
  std::vector<std::shared_ptr<const Step>> steps;
  for (size_t i = 0; i < net.layers().size(); ++i) {
    const Layer& layer = net.layers()[i];
    Tactic tactic{d.decisions.at(i).tactic};
    if (!formats.empty()) {
      for (const auto& input : layer.inputs) tactic.inputFormats.push_back(formatOf(input));
      if (!layer.outputs.empty()) tactic.outputFormat = formatOf(layer.outputs[0]);
    }
    steps.push_back(backend.instantiate(layer, tactic, layerWeights(net, layer)));
  }
  return steps;
}

std::vector<Value> runLayerOnCpu(const Layer& layer, const std::vector<const Value*>& inputs, const CpuKernelFn& kernel,
                                 const KernelContext::SubgraphRunner& subgraphRunner,
                                 const KernelContext::OutputAllocator& allocator,
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
  try {
    kernel(ctx);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kRuntimeError, layer.describe() + ": out of memory");
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kRuntimeError, layer.describe() + ": " + e.what());
  }
  for (size_t i = 0; i < layer.outputs.size(); ++i)
    if (!layer.outputs[i].empty() && ctx.outputs()[i].kind == ValueKind::kTensor && ctx.outputs()[i].tensor.empty())
      throw Error(ErrorCode::kInternal, layer.describe() + ": the kernel did not produce output " + std::to_string(i));
  return std::move(ctx.outputs());
}

std::unordered_map<std::string, size_t> lastUseSteps(const Network& network, const std::vector<size_t>& order) {
  std::unordered_map<std::string, size_t> lastUse;
  for (size_t step = 0; step < order.size(); ++step) {
    const Layer& layer = network.layers()[order[step]];
    for (const auto& in : layer.inputs) lastUse[in] = step;
    for (const auto& ref : subgraphReferences(layer)) lastUse[ref] = step;  // subgraphs read outer tensors implicitly
  }
  for (const auto& out : network.outputs()) lastUse[out] = order.size();
  return lastUse;
}

}  // namespace kiln
