// Small dense linear algebra on the GPU (kernels/cuda/linalg): Det, an LU with partial pivoting in
// double per matrix, as the CPU kernel computes it.
#include "cuda_data_step.h"

#include <kernels/cuda/linalg/linalg.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

// x [..., n, n] -> y [...].
class DetStep : public DataStep {
 public:
  using DataStep::DataStep;

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.empty() || inputs[0].dims.size() < 2) return 0;
    const int64_t n = inputs[0].dims.back();
    return k::determinantWorkspaceBytes(n ? inputs[0].elementCount() / (n * n) : 0, n);
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &y = args.outputs[0];
    const int64_t n = x.dims.back();
    check(k::determinants(input(args, 0), y.data, y.elementCount(), n, args.workspace, elementType(x),
                          streamOf(stream)));
  }
};

SupportVerdict detTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  return firstRefusal({ranksWithinLimit(tensors), floatData(layer, tensors)});
}

}  // namespace

void registerLinalgCudaOps(CudaOpRegistry& registry) { registry.add("Det", stepOp<DetStep>(detTensors)); }

}  // namespace kiln::cuda
