#pragma once
// The ops the CUDA backend runs, one family a file under ops/, each registering what it takes and
// how to instantiate a step for a layer. Every step launches kernels from kernels/cuda (or a
// library) on the stream it is given, reads the bound views and its uploaded weights, and names
// its layer in every error.
#include "../../common/registry.h"
#include "../backend.h"
#include "cuda_device.h"
#include "cuda_precision.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

struct CudaOp {
  // {} when the op's kernels take this layer with these tensors, else the reason.
  std::function<SupportVerdict(const Layer&, Precision, const LayerSignature&)> supports;
  // The step for one layer (weights uploaded, parameters worked out once).
  std::function<std::unique_ptr<Step>(const Layer&, const Tactic&, const LayerSignature&, CudaDevice&)> instantiate;
  // Candidates, best guess first; empty: the one tactic "cuda.<domain.>op" (lower case).
  std::function<std::vector<Tactic>(const Layer&, Precision, const LayerInputs&, CudaDevice&)> tactics;
  // Its step sizes outputs that follow from data (OutputAllocator) and reads shape-deciding inputs
  // in device memory (Backend::runsDataDependent); such steps synchronise their stream.
  bool dataDependent = false;
  // The inputs a layer's step reads channels-last (NHWC) as well as linear under this tactic, in
  // which case it also writes its output either way (CudaBackend::tensorFormats keeps chains of
  // such layers channels-last); empty or unset: linear only.
  std::function<std::vector<size_t>(const Layer&, const std::string& tactic)> channelsLastInputs;
  // Set where input 0 and output 0 must share their layout (windowed pools).
  bool channelsLastInAndOut = false;
  // Optional: {} when the layer alone (no tensors known yet) can run, else the reason; the fusion
  // passes ask this before making a fused layer (kiln.Pointwise: every body op has a CUDA step).
  std::function<SupportVerdict(const Layer&, Precision)> supportsLayer;
};

class CudaOpRegistry {
 public:
  static const CudaOpRegistry& instance();
  const CudaOp* find(const std::string& domain, const std::string& opType) const { return ops_.find(domain, opType); }
  void add(const std::string& domain, const std::string& opType, CudaOp op) { ops_.add(domain, opType, std::move(op)); }
  void add(const std::string& opType, CudaOp op) { add("", opType, std::move(op)); }

 private:
  OpRegistry<CudaOp> ops_;
};

// The op whose one tactic is a StepType(layer, tactic, signature, device).
template <class StepType>
CudaOp stepOp(std::function<SupportVerdict(const Layer&, Precision, const LayerSignature&)> supports = {}) {
  return {std::move(supports),
          [](const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device) {
            return std::make_unique<StepType>(layer, tactic, signature, device);
          },
          {}};
}

// The default tactic id of a layer's op: "cuda.relu", "cuda.kiln.fusedconv".
std::string defaultTacticId(const Layer& layer);

// Supports-checks shared by the families.
// Every present input and output (not the weights unless `weightsToo`) has one of `types`.
SupportVerdict allOfTypes(const LayerSignature& tensors, std::initializer_list<DataType> types, bool weightsToo = true);
// Every tensor's rank is at most the kernels' limit (8).
SupportVerdict ranksWithinLimit(const LayerSignature& tensors);
// The first verdict that says no, else yes.
SupportVerdict firstRefusal(std::initializer_list<SupportVerdict> verdicts);

#define KILN_CUDA_OP_FAMILIES(X) \
  X(Conversion)                  \
  X(Elementwise)                 \
  X(Views)                       \
  X(Layout)                      \
  X(Generators)                  \
  X(Indexing)                    \
  X(Resize)                      \
  X(Pool)                        \
  X(SqueezeExcitation)           \
  X(Softmax)                     \
  X(Norm)                        \
  X(Pointwise)                   \
  X(Quant)                       \
  X(MatMul)                      \
  X(Conv)                        \
  X(Attention)                   \
  X(Recurrent)                   \
  X(Einsum)                      \
  X(Spectral)                    \
  X(Linalg)                      \
  X(Selection)                   \
  X(Sampling)                    \
  X(IntegerMath)                 \
  X(Quantized)                   \
  X(WeightOnly)                  \
  X(Reduce)                      \
  X(Loss)                        \
  X(Collective)

#define KILN_DECLARE_CUDA_FAMILY(Family) void register##Family##CudaOps(CudaOpRegistry& registry);
KILN_CUDA_OP_FAMILIES(KILN_DECLARE_CUDA_FAMILY)
#undef KILN_DECLARE_CUDA_FAMILY

}  // namespace kiln::cuda
