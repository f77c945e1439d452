// kiln.WeightOnlyMatMul (INT4 weight-only, kernels/cpu/quant/int4_weight_format.h) on the GPU: the
// packed weights stay int4 in device memory. This file's tactic dequantizes them at each launch
// into the workspace as a dense W [K, N] of the activations' type
// (kernels/cuda/quant/int4_dequantize.h), cuBLASLt multiplies, and the fused epilogue (bias,
// activation, residual) runs as elementwise kernels (cuda_epilogue.h). fp32 is exact as on the CPU
// (the weights are the CPU's, the product CUBLAS_COMPUTE_32F); fp16 / bf16 round each weight once
// more into the storage type. fp16 / bf16 layers are also offered the GEMM that dequantizes in its
// prologue, reading 4 bits a weight (cuda_int4_fused_gemm.cpp); the builder times the two.
//
// "cuda.matmul.int4_dequant_gemm.<precision>"; the algorithm is the heuristic's first for each
// shape the step meets.
#include "cuda_weight_only.h"

#include "../../../ops/weight_only.h"
#include "../cublaslt_matmul.h"
#include "../../common/fused_epilogue.h"
#include "../cuda_epilogue.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"
#include "../workspace_math.h"

#include <kernels/cpu/quant/int4_weight_format.h>
#include <kernels/cuda/quant/int4_dequantize.h>
#include <kiln/error.h>
#include <kiln/shape.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

constexpr size_t kA = kInt4A, kPacked = kInt4Packed, kBias = kInt4Bias, kResidual = kInt4Residual;
const std::string kTacticBase = "cuda.matmul.int4_dequant_gemm.";

using Dims = Int4Dims;
Dims dimsOf(const Layer& layer) { return int4DimsOf(layer); }

// The workspace: W [K, N], the epilogue's scratch, then cuBLASLt's.
uint64_t weightBytes(const Dims& d, DataType storage) { return alignUp(uint64_t(d.k * d.n) * byteSize(storage)); }

struct ShapeEntry {
  int64_t rows = 0;
  std::unique_ptr<LtGemm> gemm;
  cublasLtMatmulAlgo_t algo{};
  uint64_t cublasBytes = 0;
  ElementwiseEpilogue::Work work;  // made with the entry (launches allocate nothing); pointers set at each launch
};

class WeightOnlyState : public StepState {
 public:
  std::vector<std::unique_ptr<ShapeEntry>> shapes;
};

class WeightOnlyStep : public CudaStep {
 public:
  WeightOnlyStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device, DataType::kUndefined, {kBias}),  // bias_ is its copy
        precision_(tacticPrecision(layer, tactic)),
        storage_(storageOf(outputDeclared(signature), precision_)),
        dims_(dimsOf(layer)),
        epilogue_(layer, storage_, device),
        hasResidual_(layer.hasInput(kResidual)),
        name_(layer.describe()) {
    checkInt4Weights(layer, dims_, weight(kPacked), weight(weight_only::kScalesInput),
                     weight(weight_only::kZeroPointsInput));
    bias_ = int4BiasOf(layer, dims_, weight(kBias), storage_, device);  // in the output's type, as the epilogue adds it
  }

  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView> outputs) const override {
    const int64_t elements = outputs.empty() ? 0 : outputs[0].elementCount();
    return weightBytes(dims_, storage_) + alignUp(epilogue_.scratchBytes(elements)) + kCublasWorkspaceBytes;
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<WeightOnlyState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<WeightOnlyState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    const int64_t rows = int4RowsOf(layer_, dims_, args.inputs[kA]);
    if (rows == 0) return;
    const TensorView& out = args.outputs[0];
    const uint64_t wBytes = weightBytes(dims_, storage_),
                   scratchBytes = alignUp(epilogue_.scratchBytes(out.elementCount()));
    if (args.workspaceBytes < wBytes + scratchBytes)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(wBytes + scratchBytes) +
                                            " it needs");
    char* workspace = static_cast<char*>(args.workspace);
    ShapeEntry& entry = shapeFor(*state, rows, args.workspaceBytes - wBytes - scratchBytes);
    const cudaStream_t s = streamOf(stream);
    k::Int4WeightsView w;
    w.packed = static_cast<const uint8_t*>(input(args, kPacked));
    w.scales = static_cast<const float*>(input(args, weight_only::kScalesInput));
    if (layer_.hasInput(weight_only::kZeroPointsInput))
      w.zeros = static_cast<const int8_t*>(input(args, weight_only::kZeroPointsInput));
    w.k = dims_.k, w.n = dims_.n, w.groupSize = dims_.groupSize;
    check(k::dequantizeInt4Weights(w, workspace, elementType(out), s), "dequantizing its int4 weights");
    entry.gemm->run(cublasLtHandle(device_), entry.algo, 1.0f, input(args, kA), workspace, 0.0f, out.data, out.data,
                    nullptr, workspace + wBytes + scratchBytes, entry.cublasBytes, s, name_);
    ElementwiseEpilogue::Work& work = entry.work;
    const void* residual = hasResidual_ ? input(args, kResidual) : nullptr;
    (epilogue_.attributes().residualBeforeActivation ? work.residualBefore : work.residualAfter) = residual;
    epilogue_.apply(out.data, out.dims, work, workspace + wBytes, s);
  }

 private:
  ShapeEntry& shapeFor(WeightOnlyState& state, int64_t rows, uint64_t budget) const {
    for (auto& entry : state.shapes)
      if (entry->rows == rows) return *entry;
    auto entry = std::make_unique<ShapeEntry>();
    entry->rows = rows;
    GemmShape g;
    g.m = rows, g.n = dims_.n, g.k = dims_.k;
    g.abType = g.cdType = *cublasTypeOf(storage_);
    g.compute = storage_ == DataType::kFloat32 && precision_ == Precision::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                 : CUBLAS_COMPUTE_32F;
    entry->gemm = std::make_unique<LtGemm>(g);
    const auto results =
        entry->gemm->heuristics(cublasLtHandle(device_), 1, std::min(budget, kCublasWorkspaceBytes), 256);
    if (results.empty())
      throw Error(ErrorCode::kUnsupported, name_ + ": cuBLASLt has no algorithm for its " + g.describe() + " product");
    entry->algo = results[0].algo;
    entry->cublasBytes = results[0].workspaceSize;
    entry->work.bias = bias_.get();
    entry->work.biasDims = {dims_.n};
    state.shapes.push_back(std::move(entry));
    return *state.shapes.back();
  }

  Precision precision_;
  DataType storage_;
  Dims dims_;
  ElementwiseEpilogue epilogue_;
  bool hasResidual_;
  std::string name_;
  DeviceCopy bias_;
};

std::vector<Tactic> weightOnlyTactics(const Layer& layer, Precision precision, const LayerInputs& inputs, CudaDevice&) {
  Tactic t;
  t.id = kTacticBase + precisionTag(precision);
  const DataType storage = storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[kA], precision);
  const Dims d = dimsOf(layer);
  int64_t rows = 1;
  if (!inputs.dims.empty() && !inputs.dims[kA].empty() && d.k > 0) rows = elementCount(inputs.dims[kA]) / d.k;
  uint64_t scratch = 0;
  try {
    scratch = ElementwiseEpilogue::scratchBytes(readFusedEpilogue(layer), rows * d.n, storage);
  } catch (const Error&) {
    // An unknown activation: the step reports it naming the layer.
  }
  t.workspaceBytes = weightBytes(d, storage) + alignUp(scratch) + kCublasWorkspaceBytes;
  return {t};
}

SupportVerdict weightOnlyTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  const Tensor* a = tensors.inputs.empty() ? nullptr : tensors.inputs[kA];
  if (a && a->dtype != DataType::kFloat32 && a->dtype != DataType::kFloat16 && a->dtype != DataType::kBFloat16)
    return {false, "kiln.WeightOnlyMatMul with " + std::string(toString(a->dtype)) + " A has no CUDA kernel"};
  for (size_t i : {kPacked, weight_only::kScalesInput, weight_only::kZeroPointsInput, kBias})
    if (i < tensors.inputs.size() && tensors.inputs[i] && !tensors.inputs[i]->isConstant())
      return {false, "its input '" + tensors.inputs[i]->name +
                         "' is not a constant (the int4 step takes constant "
                         "weights, scales, zero points and bias)"};
  if (!activationNamed(layer.attrString(fused::kActivation, "")))
    return {false, "the activation '" + layer.attrString(fused::kActivation, "") + "' has no CUDA kernel"};
  return {};
}

}  // namespace

Int4Dims int4DimsOf(const Layer& layer) {
  return {layer.attrInt(weight_only::kK, 0), layer.attrInt(weight_only::kN, 0),
          layer.attrInt(weight_only::kGroupSize, 0)};
}

void checkInt4Weights(const Layer& layer, const Int4Dims& d, const HostTensor* packed, const HostTensor* scales,
                      const HostTensor* zeros) {
  const int64_t groups = d.groupSize > 0 ? kernels::int4GroupCount(d.k, d.groupSize) : 0;
  if (d.k <= 0 || d.n <= 0 || d.groupSize <= 0 || d.groupSize % 2 != 0 || !packed || !scales ||
      packed->dtype() != DataType::kUInt8 || packed->elementCount() != d.n * groups * (d.groupSize / 2) ||
      scales->dtype() != DataType::kFloat32 || scales->elementCount() != d.n * groups ||
      (layer.hasInput(weight_only::kZeroPointsInput) &&
       (!zeros || zeros->dtype() != DataType::kInt8 || zeros->elementCount() != d.n * groups)))
    throw Error(ErrorCode::kInvalidArgument,
                layer.describe() + ": its int4 weights, scales or zero points do not match K " + std::to_string(d.k) +
                    ", N " + std::to_string(d.n) + " and group size " + std::to_string(d.groupSize) +
                    " (constant uint8, float32 and int8 tensors); rebuild the plan");
}

DeviceCopy int4BiasOf(const Layer& layer, const Int4Dims& dims, const HostTensor* bias, DataType type,
                      CudaDevice& device) {
  if (!layer.hasInput(kInt4Bias)) return {};
  if (!bias || bias->elementCount() != dims.n)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": its bias is not a constant of N values");
  const std::vector<double> values = bias->toDoubleVector();
  return deviceVector(device.allocator, std::vector<float>(values.begin(), values.end()), type);
}

int64_t int4RowsOf(const Layer& layer, const Int4Dims& dims, const TensorView& a) {
  if (a.dims.empty() || a.dims.back() != dims.k)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": A has shape " + dimsToString(a.dims) +
                                                 "; its last dim must be K = " + std::to_string(dims.k));
  return a.elementCount() / dims.k;
}

void registerWeightOnlyCudaOps(CudaOpRegistry& registry) {
  CudaOp op = stepOp<WeightOnlyStep>(weightOnlyTensors);
  op.instantiate = [](const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                      CudaDevice& device) -> std::unique_ptr<Step> {
    if (isInt4FusedGemmTactic(tactic)) return makeInt4FusedGemmStep(layer, tactic, signature, device);
    return std::make_unique<WeightOnlyStep>(layer, tactic, signature, device);
  };
  // The first is the best guess where the builder does not time: the fused GEMM for up to
  // kFusedFirstRows rows (decode and short prompts: weight traffic dominates, and it reads a quarter
  // of the fp16 weights' bytes with no dense copy), cuBLASLt's tuned kernels above.
  op.tactics = [](const Layer& layer, Precision precision, const LayerInputs& inputs, CudaDevice& device) {
    constexpr int64_t kFusedFirstRows = 256;
    std::vector<Tactic> fused = int4FusedGemmTactics(layer, precision, inputs, device);
    std::vector<Tactic> tactics = weightOnlyTactics(layer, precision, inputs, device);
    const Dims d = dimsOf(layer);
    int64_t rows = 1;
    if (!inputs.dims.empty() && !inputs.dims[kA].empty() && d.k > 0) rows = elementCount(inputs.dims[kA]) / d.k;
    tactics.insert(rows <= kFusedFirstRows ? tactics.begin() : tactics.end(), fused.begin(), fused.end());
    return tactics;
  };
  registry.add(fused::kDomain, weight_only::kWeightOnlyMatMul, op);
}

}  // namespace kiln::cuda
