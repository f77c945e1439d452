#pragma once
// Everything a plan holds, as plain data: the optimised network (layers in launch order, weights in
// its constants), each layer's backend, precision, tactic and role, each tensor's storage type,
// format and memory space, the profiles and a memory plan per memory space. The builder makes it,
// PlanWriter serializes it, PlanReader rebuilds it, and the runtime executes it. Nothing here
// knows backends or steps.
#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/network.h>
#include <kiln/runtime.h>

#include "../ir/tensor_placement.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

// Why a layer is in the network: compiled from the model, or inserted by the builder where
// neighbours disagree on memory space (Copy), storage type (Cast) or format (Reformat).
enum class LayerRole : uint8_t { kCompute, kCopy, kCast, kReformat };
const char* toString(LayerRole role);

// When a layer runs: launched by enqueue, or on the host while shapes are worked out (shape-tensor
// arithmetic such as Shape -> Gather -> Concat feeding a Reshape).
enum class LayerPhase : uint8_t { kLaunch, kShape };
const char* toString(LayerPhase phase);

struct PlannedLayer {
  std::string backend = "cpu";  // the registry name of the backend that runs it
  Precision precision = Precision::kFP32;
  std::string tactic;
  std::vector<uint8_t> tacticPayload;  // backend-private (a library algorithm, a compiled kernel)
  std::vector<TensorFormat> inputFormats;  // per input; empty: all linear
  TensorFormat outputFormat = TensorFormat::kLinear;
  uint64_t workspaceBytes = 0;  // at the largest shapes of every profile
  LayerRole role = LayerRole::kCompute;
  LayerPhase phase = LayerPhase::kLaunch;
  // Non-empty when the layer's output shape depends on data the engine computes (NonZero, a Range
  // over computed limits): the runtime synchronises there and works out later shapes after it.
  std::string dataDependentShape;
  // Non-empty when the engine's main backend could not run the layer and it fell back to the CPU.
  std::string fallbackReason;
  // The tensors bound to what its subgraph bodies read from outside (subgraphReferences order):
  // those names, or the copies the builder made of them where they live elsewhere.
  std::vector<std::string> implicitInputs;
};

struct PlannedTensor {
  DataType storage = DataType::kUndefined;  // what its memory holds (fp16 for an fp32 tensor of an fp16 layer)
  TensorFormat format = TensorFormat::kLinear;
  MemorySpace space = MemorySpace::kHost;
  // The model tensor whose values it holds: its own name, the graph output a renamed producer
  // output stands for, or the source of an inserted conversion (which sets `converted`).
  std::string modelTensor;
  bool converted = false;
};

// Activations of one memory space share one arena: each tensor gets [offset, offset + bytes) for
// its lifetime, at the largest shapes of every profile.
struct MemoryAssignment {
  std::string tensor;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct MemoryPlan {
  MemorySpace space = MemorySpace::kHost;
  std::vector<MemoryAssignment> assignments;
  uint64_t arenaBytes = 0;  // peak with sharing
  uint64_t naiveBytes = 0;  // sum without sharing
};

struct EnginePlan {
  PlanInfo info;
  std::shared_ptr<Network> network;  // layers in launch order
  std::vector<PlannedLayer> layers;  // parallel to network->layers()
  std::map<std::string, PlannedTensor> tensors;  // every non-constant tensor
  std::vector<OptimizationProfile> profiles;
  std::vector<MemoryPlan> memory;  // one per memory space that holds activations
  BuildReport report;

  const PlannedTensor& tensor(const std::string& name) const;  // throws naming the tensor
  const MemoryPlan* memoryFor(MemorySpace space) const;
};

}  // namespace kiln
