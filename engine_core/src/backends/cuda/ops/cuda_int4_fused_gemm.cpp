// kiln.WeightOnlyMatMul's fused tactic (cuda_weight_only.h): one kernel reads the packed int4
// weights, dequantizes each K-tile in its prologue and multiplies on the tensor cores
// (kernels/cuda/quant/int4_gemm.h), running the layer's epilogue (bias, residual, activation) on
// its fp32 sums before the one rounding into the output. A residual that is not an activation of
// the output's type and size is added, and the activation applied, by elementwise kernels after
// it (cuda_epilogue.h). fp16 / bf16 only (the kernel's mma.sync takes those), sm_80 on; fp32
// layers keep the dequantize + cuBLASLt tactic.
#include "cuda_weight_only.h"

#include "../../../ops/weight_only.h"
#include "../../common/fused_epilogue.h"
#include "../cuda_epilogue.h"
#include "../cuda_precision.h"
#include "../cuda_step.h"
#include "../workspace_math.h"

#include <kernels/cuda/quant/int4_gemm.h>
#include <kiln/error.h>
#include <kiln/shape.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

const std::string kTacticBase = "cuda.matmul.int4_fused_gemm.";

// The workspace: the kernel's split-K sums, then the epilogue's scratch.
uint64_t fusedWorkspaceBytes(int64_t rows, const Int4Dims& d, uint64_t epilogueScratch) {
  return alignUp(k::int4GemmWorkspaceBytes(rows, d.n, d.k)) + alignUp(epilogueScratch);
}

class Int4FusedGemmStep : public CudaStep {
 public:
  Int4FusedGemmStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device, DataType::kUndefined, {kInt4Bias}),  // bias_ is its copy
        precision_(tacticPrecision(layer, tactic)),
        storage_(storageOf(outputDeclared(signature), precision_)),
        dims_(int4DimsOf(layer)),
        epilogue_(layer, storage_, device),
        hasResidual_(layer.hasInput(kInt4Residual)),
        name_(layer.describe()) {
    if (storage_ != DataType::kFloat16 && storage_ != DataType::kBFloat16)
      throw Error(ErrorCode::kInvalidArgument, name_ + ": the fused int4 GEMM computes in float16 or bfloat16, not " +
                                                   std::string(toString(storage_)) + "; rebuild the plan");
    checkInt4Weights(layer, dims_, weight(kInt4Packed), weight(weight_only::kScalesInput),
                     weight(weight_only::kZeroPointsInput));
    // fp32: the kernel adds it before rounding its sums.
    bias_ = int4BiasOf(layer, dims_, weight(kInt4Bias), DataType::kFloat32, device);
  }

  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView> outputs) const override {
    const int64_t elements = outputs.empty() ? 0 : outputs[0].elementCount();
    return fusedWorkspaceBytes(elements / dims_.n, dims_, epilogue_.scratchBytes(elements));
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& a = args.inputs[kInt4A];
    const int64_t rows = int4RowsOf(layer_, dims_, a);
    if (rows == 0) return;
    const TensorView& out = args.outputs[0];
    if (elementType(a) != elementType(out))
      throw Error(ErrorCode::kInvalidArgument, name_ + ": the fused int4 GEMM needs A and its output of one type");
    const uint64_t splitBytes = alignUp(k::int4GemmWorkspaceBytes(rows, dims_.n, dims_.k));
    const uint64_t needed = splitBytes + alignUp(epilogue_.scratchBytes(out.elementCount()));
    if (args.workspaceBytes < needed)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(needed) + " it needs");
    char* workspace = static_cast<char*>(args.workspace);
    const cudaStream_t s = streamOf(stream);
    k::Int4WeightsView w;
    w.packed = static_cast<const uint8_t*>(input(args, kInt4Packed));
    w.scales = static_cast<const float*>(input(args, weight_only::kScalesInput));
    if (layer_.hasInput(weight_only::kZeroPointsInput))
      w.zeros = static_cast<const int8_t*>(input(args, weight_only::kZeroPointsInput));
    w.k = dims_.k, w.n = dims_.n, w.groupSize = dims_.groupSize;
    // The whole epilogue in the kernel, unless the residual is not an activation of the output's
    // type and size (a constant, a broadcast): then residual and activation as elementwise kernels.
    const void* residual = hasResidual_ ? input(args, kInt4Residual) : nullptr;
    const TensorView* residualView = hasResidual_ ? &args.inputs[kInt4Residual] : nullptr;
    const bool fuseAll = !residual || (weightType(kInt4Residual) == DataType::kUndefined &&
                                       elementType(*residualView) == elementType(out) &&
                                       residualView->elementCount() == out.elementCount());
    k::Int4GemmEpilogue e;
    e.bias = static_cast<const float*>(bias_.get());
    if (fuseAll) {
      const FusedEpilogue& f = epilogue_.attributes();
      e.residual = residual;
      e.residualBeforeActivation = f.residualBeforeActivation;
      e.activation = f.activation;
      e.alpha = f.alpha, e.beta = f.beta;
    }
    check(k::int4Gemm(input(args, kInt4A), rows, w, e, out.data, elementType(out), workspace, splitBytes, s),
          "launching its int4 GEMM");
    if (fuseAll) return;
    ElementwiseEpilogue::Work work;  // the bias is added; no allocation (biasDims stays empty)
    (epilogue_.attributes().residualBeforeActivation ? work.residualBefore : work.residualAfter) = residual;
    epilogue_.apply(out.data, out.dims, work, workspace + splitBytes, s);
  }

 private:
  Precision precision_;
  DataType storage_;
  Int4Dims dims_;
  ElementwiseEpilogue epilogue_;
  bool hasResidual_;
  std::string name_;
  DeviceCopy bias_;
};

}  // namespace

std::vector<Tactic> int4FusedGemmTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                         CudaDevice& device) {
  if (precision != Precision::kFP16 && precision != Precision::kBF16) return {};
  if (device.properties.major < 8) return {};  // mma.sync m16n8k16 on fp16 / bf16: Ampere on
  const DataType storage = storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[kInt4A], precision);
  if (storage != DataType::kFloat16 && storage != DataType::kBFloat16) return {};
  const Int4Dims d = int4DimsOf(layer);
  if (d.k <= 0 || d.n <= 0) return {};
  int64_t rows = 1;
  if (!inputs.dims.empty() && !inputs.dims[kInt4A].empty()) rows = elementCount(inputs.dims[kInt4A]) / d.k;
  uint64_t scratch = 0;
  try {
    scratch = ElementwiseEpilogue::scratchBytes(readFusedEpilogue(layer), rows * d.n, storage);
  } catch (const Error&) {
    // An unknown activation: the step reports it naming the layer.
  }
  Tactic t;
  t.id = kTacticBase + precisionTag(precision);
  // The split-K sums do not grow with the rows (fewer rows split more): the most any row count up
  // to the max shape's needs (steps ask for their own shape's at run time).
  t.workspaceBytes = fusedWorkspaceBytes(rows, d, scratch);
  for (int64_t r = 1; r < rows; r *= 2)
    t.workspaceBytes = std::max(t.workspaceBytes, fusedWorkspaceBytes(r, d, scratch));
  return {t};
}

bool isInt4FusedGemmTactic(const Tactic& tactic) { return tactic.id.rfind(kTacticBase, 0) == 0; }

std::unique_ptr<Step> makeInt4FusedGemmStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                            CudaDevice& device) {
  return std::make_unique<Int4FusedGemmStep>(layer, tactic, signature, device);
}

}  // namespace kiln::cuda
