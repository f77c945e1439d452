#pragma once
// A layer on a CPU kernel as a Step: the bound views become the KernelContext's inputs and output
// memory. Float activations stored narrower than the layer computes (fp16/bf16 storage of an fp32
// tensor) are widened into the workspace before the kernel and narrowed into the bound output
// after it, so the runtime converts nothing. Control-flow layers run their bodies on the host with
// the outer values their views give.
#include "../backend.h"
#include "cpu_kernel.h"

#include "../../runtime/subgraph_cache.h"

#include <mutex>
#include <optional>

namespace kiln {

class CpuStep : public Step {
 public:
  // `source` is null for the op's reference kernel; `makeKernel` gets the weights as the kernel
  // reads them (widened to fp32 where the plan stores them narrower).
  using KernelFactory = std::function<CpuKernelFn(const LayerWeights& weights)>;
  CpuStep(const Layer& layer, Tactic tactic, const KernelFactory& makeKernel, const CpuTactic* source,
          LayerSignature signature);

  const Tactic& tactic() const override { return tactic_; }
  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override;
  std::unique_ptr<StepState> createState() const override;
  void enqueue(const StepArgs& args, Stream& stream) const override;

 private:
  // The tactic's own scratch at these input dims (cached for the last dims: asking oneDNN plans a
  // primitive).
  uint64_t tacticWorkspace(std::span<const TensorView> inputs) const;

  const Layer& layer_;
  Tactic tactic_;
  CpuKernelFn kernel_;
  const CpuTactic* source_;
  LayerSignature signature_;
  std::vector<std::optional<HostTensor>> weights_;  // constant inputs, widened where stored narrower
  std::vector<std::string> outerNames_;  // what its subgraph bodies read from outside
  // The layer's inferred output types when it has subgraphs (shared by the engine's contexts).
  mutable SubgraphInferenceCache inferenceCache_;
  mutable std::mutex workspaceMutex_;
  mutable bool workspaceKnown_ = false;
  mutable LayerShapes workspaceDims_;
  mutable uint64_t workspace_ = 0;
};

}  // namespace kiln
