// The CPU backend: runs every op of the CPU kernel registry, keeps activations in fp32, fp16 or
// bf16 between layers (computing in fp32 inside a layer), and has no INT8/FP8 kernels yet. Ops
// with several implementations offer them as tactics; the others have one, named after the op.
#include "../../runtime/layer_runner.h"
#include "../../runtime/subgraph_cache.h"
#include "../backend.h"
#include "channels_last.h"
#include "cpu_device.h"
#include "cpu_kernel.h"

#include <kernels/cpu/common/parallel.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace kiln {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// The id of an op's reference kernel as a tactic: "cpu.relu", "cpu.kiln.fusedconv".
std::string referenceTacticId(const Layer& layer) {
  return "cpu." + (layer.domain.empty() ? "" : layer.domain + ".") + lower(layer.opType);
}

LayerShapes shapesOf(const std::vector<const Value*>& inputs) {
  LayerShapes dims;
  for (const Value* v : inputs) dims.push_back(v && !v->isSequence() && v->hasElement ? v->tensor.dims() : std::vector<int64_t>{});
  return dims;
}

class CpuStep : public Step {
 public:
  // `source` is null for the reference kernel.
  CpuStep(const Layer& layer, Tactic tactic, CpuKernelFn kernel, const CpuTactic* source)
      : layer_(layer), tactic_(std::move(tactic)), kernel_(std::move(kernel)), source_(source) {}

  const Tactic& tactic() const override { return tactic_; }

  // Asked before every run: the answer for the last input dims is kept, since working it out can
  // cost tens of microseconds (oneDNN plans a primitive to size its scratchpad).
  uint64_t workspaceBytes(const std::vector<const Value*>& inputs) const override {
    if (!source_ || !source_->workspaceBytes) return 0;
    LayerShapes dims = shapesOf(inputs);
    std::lock_guard lock(workspaceMutex_);
    if (!workspaceKnown_ || dims != workspaceDims_) {
      workspace_ = source_->workspaceBytes(layer_, dims);
      workspaceDims_ = std::move(dims);
      workspaceKnown_ = true;
    }
    return workspace_;
  }

  std::vector<Value> enqueue(const StepIO& io, Stream&) const override {
    return runLayerOnCpu(layer_, io.inputs, kernel_, io.subgraphs, io.outputs, io.scopeTypes, io.workspace,
                         io.workspaceBytes, &inferenceCache_);
  }

 private:
  const Layer& layer_;
  Tactic tactic_;
  CpuKernelFn kernel_;
  const CpuTactic* source_;
  // The layer's inferred output types when it has subgraphs (shared by the engine's contexts).
  mutable SubgraphInferenceCache inferenceCache_;
  mutable std::mutex workspaceMutex_;
  mutable bool workspaceKnown_ = false;
  mutable LayerShapes workspaceDims_;
  mutable uint64_t workspace_ = 0;
};

class CpuBackend : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::kCpu; }

  DeviceInfo device() const override {
    return {"CPU (x86-64, " + std::to_string(kernels::cpuThreadCount()) + " threads)", ""};
  }

  SupportVerdict supports(const Layer& layer, Precision precision) const override {
    if (!CpuKernelRegistry::instance().find(layer.domain, layer.opType))
      return {false, "no CPU kernel for " + layer.opType};
    if (precision == Precision::kINT8 || precision == Precision::kFP8)
      return {false, "the CPU backend has no " + std::string(toString(precision)) + " kernels"};
    return {};
  }

  // Activations are computed in fp32 whatever the storage precision, so the tactics do not depend on it.
  std::vector<Tactic> tactics(const Layer& layer, Precision, const LayerInputs& inputs) const override {
    std::vector<Tactic> out;
    for (const CpuTactic& t : CpuKernelRegistry::instance().tactics(layer.domain, layer.opType))
      if (!t.applies || t.applies(layer, inputs))
        out.push_back({t.id, {}, TensorFormat::kLinear, t.workspaceBytes ? t.workspaceBytes(layer, inputs.dims) : 0,
                       t.channelsLast});
    if (out.empty()) out.push_back({referenceTacticId(layer)});
    return out;
  }

  std::unique_ptr<Step> instantiate(const Layer& layer, const Tactic& tactic, const LayerWeights& weights) const override {
    if (tactic.id == referenceTacticId(layer)) return std::make_unique<CpuStep>(layer, tactic, cpuKernelFor(layer), nullptr);
    const auto& registry = CpuKernelRegistry::instance();
    const CpuTactic* source = registry.findTactic(layer.domain, layer.opType, tactic.id);
    if (!source) {
      std::string known = referenceTacticId(layer);
      for (const auto& t : registry.tactics(layer.domain, layer.opType)) known += ", " + t.id;
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": the CPU backend has no tactic '" + tactic.id +
                                                   "' (it has " + known +
                                                   "); the plan was made by another Kiln version: rebuild it");
    }
    return std::make_unique<CpuStep>(layer, tactic, source->instantiate(layer, weights, tactic), source);
  }

  std::unordered_map<std::string, TensorFormat> tensorFormats(const Network& network,
                                                              const std::vector<std::string>& tactics,
                                                              const std::vector<Precision>& precisions) const override {
    return channelsLastTensors(network, tactics, precisions);
  }

  DeviceAllocator& allocator() const override { return cpuAllocator(); }
  std::unique_ptr<Stream> createStream() const override { return makeCpuStream(); }
  std::unique_ptr<Event> createEvent() const override { return makeCpuEvent(); }
};

}  // namespace

std::unique_ptr<Backend> makeCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace kiln
