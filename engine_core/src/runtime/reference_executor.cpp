#include <kiln/error.h>
#include <kiln/reference_executor.h>

#include "host_execution.h"
#include "subgraph_cache.h"

#include <chrono>
#include <algorithm>
#include <unordered_map>

namespace kiln {
namespace {

void checkInput(const Tensor& declared, const Value& given) {
  const std::string& name = declared.name;
  if (declared.kind == ValueKind::kTensor && (given.isSequence() || !given.hasElement))
    throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' must be a tensor, got a " +
                                                 std::string(toString(given.kind)));
  if (given.isSequence() || !given.hasElement) return;
  const HostTensor& t = given.tensor;
  if (declared.dtype != DataType::kUndefined && t.dtype() != declared.dtype)
    throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' must be " + std::string(toString(declared.dtype)) +
                                                 ", got " + std::string(toString(t.dtype())) +
                                                 "; convert the data to the model's input type");
  if (!declared.shape.hasRank()) return;
  if (declared.shape.rank() != t.rank())
    throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' must have rank " +
                                                 std::to_string(declared.shape.rank()) + " (shape " +
                                                 declared.shape.toString() + "), got shape " + dimsToString(t.dims()));
  for (size_t d = 0; d < t.rank(); ++d) {
    const Dim& want = declared.shape[d];
    if (want.isKnown() && want.value() != t.dim(d))
      throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' dimension " + std::to_string(d) + " must be " +
                                                   std::to_string(want.value()) + " (shape " +
                                                   declared.shape.toString() + "), got " + std::to_string(t.dim(d)));
  }
}

}  // namespace

std::vector<Value> executeGraph(const Network& graph, const std::vector<Value>& inputs,
                                const std::function<const Value*(const std::string&)>& outer,
                                const ReferenceExecutorOptions& options) {
  SubgraphRunCache cache;
  return executeGraphCached(graph, inputs, outer, options, cache);
}

std::vector<Value> executeGraphCached(const Network& graph, const std::vector<Value>& inputs,
                                      const std::function<const Value*(const std::string&)>& outer,
                                      const ReferenceExecutorOptions& options, SubgraphRunCache& cache) {
  std::unordered_map<std::string, Value> values;
  const auto& graphInputs = graph.inputs();
  for (size_t i = 0; i < graphInputs.size() && i < inputs.size(); ++i) values[graphInputs[i]] = inputs[i];

  // Constants are wrapped on first use; they share storage with the network.
  auto lookup = [&](const std::string& name) -> const Value* {
    if (auto it = values.find(name); it != values.end()) return &it->second;
    if (const Tensor* t = graph.findTensor(name); t && t->isConstant()) {
      auto [it, _] = values.emplace(name, Value(*t->constant));
      return &it->second;
    }
    return outer ? outer(name) : nullptr;
  };
  auto subgraphRunner = [&](const Network& body, const std::vector<Value>& bodyInputs) {
    return executeGraphCached(body, bodyInputs, lookup, options, cache);
  };

  // Free each intermediate after its last reader to bound memory on big models.
  const GraphSchedule& schedule = cache.schedule(graph);
  const auto& order = schedule.order;
  const auto& lastUse = schedule.lastUse;
  // Types of the values subgraph bodies can see, for inferring If/Loop/Scan bodies at run time.
  std::unordered_map<std::string, Tensor> scopeTypes;
  const Network::ScopeLookup scopeTypeLookup = [&](const std::string& name) -> const Tensor* {
    const Value* v = lookup(name);
    if (!v) return nullptr;
    return &scopeTypes.insert_or_assign(name, describeValue(name, *v)).first->second;
  };
  for (size_t step = 0; step < order.size(); ++step) {
    const Layer& layer = graph.layers()[order[step]];
    const CpuKernelFn& kernel = cpuKernelFor(layer);
    std::vector<const Value*> inputValues;
    for (const auto& name : layer.inputs) {
      const Value* v = name.empty() ? nullptr : lookup(name);
      if (!name.empty() && !v)
        throw Error(ErrorCode::kRuntimeError, layer.describe() + ": input '" + name + "' has no value");
      inputValues.push_back(v);
    }
    // Timed only for an afterLayer callback: two clock reads a layer are a few percent of a small Loop body.
    const auto start = options.afterLayer ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    auto outputs =
        runLayerOnCpu(layer, inputValues, kernel, subgraphRunner, {}, scopeTypeLookup, nullptr, 0, &cache.inference());
    if (options.afterLayer)
      options.afterLayer(layer, outputs,
                         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    for (size_t i = 0; i < layer.outputs.size(); ++i)
      if (!layer.outputs[i].empty()) values[layer.outputs[i]] = std::move(outputs[i]);
    for (auto it = values.begin(); it != values.end();) {
      auto use = lastUse.find(it->first);
      bool dead = use != lastUse.end() && use->second == step;
      it = dead ? values.erase(it) : std::next(it);
    }
  }

  std::vector<Value> results;
  for (const auto& name : graph.outputs()) {
    const Value* v = lookup(name);
    if (!v) throw Error(ErrorCode::kRuntimeError, "graph output '" + name + "' was not computed");
    results.push_back(*v);
  }
  return results;
}

ReferenceExecutor::ReferenceExecutor(std::shared_ptr<const Network> network, ReferenceExecutorOptions options)
    : network_(std::move(network)), options_(std::move(options)) {
  network_->validate();
}

ValueMap ReferenceExecutor::run(const ValueMap& inputs) const {
  std::vector<Value> ordered;
  for (const auto& name : network_->inputs()) {
    const Tensor& declared = network_->tensor(name);
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      if (declared.isConstant()) {  // an initializer listed as input: the default applies
        ordered.push_back(Value(*declared.constant));
        continue;
      }
      throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' was not given a value");
    }
    checkInput(declared, it->second);
    ordered.push_back(it->second);
  }
  for (const auto& [name, v] : inputs)
    if (!network_->findTensor(name) ||
        std::find(network_->inputs().begin(), network_->inputs().end(), name) == network_->inputs().end())
      throw Error(ErrorCode::kInvalidArgument, "'" + name + "' is not an input of the model");
  auto results = executeGraph(*network_, ordered, {}, options_);
  ValueMap out;
  for (size_t i = 0; i < results.size(); ++i) out[network_->outputs()[i]] = std::move(results[i]);
  return out;
}

}  // namespace kiln
