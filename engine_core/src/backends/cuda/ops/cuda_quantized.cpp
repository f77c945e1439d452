// kiln.QuantizedConv and kiln.QuantizedMatMul in int8 and fp8 on cuBLASLt's 8-bit tensor-core
// products (quantized_gemm_plan.h): the activation is quantized on entry into the product's operand
// (a convolution's gathered as im2col rows, a 1x1 channels-last one read as it is), cuBLASLt sums
// exactly (int32 for int8, fp32 for fp8 e4m3) into the workspace, and one kernel dequantizes the
// sums per channel with the fused epilogue into the output (kernels/cuda/quant/quantized_gemm.h),
// in the output's storage type or quantized again where the layer has an output scale. The sums
// are the CPU's (exact integers; fp8 products exact in fp32), so the two backends agree up to
// float rounding.
//
// An fp8 layer with an fp16 / bf16 output can instead have cuBLASLt do the whole dequantization
// (per-column scales, bias, Relu / GELU, the residual as C) and write the output itself: the fused
// tactics, offered first and timed against the others.
//
// Convolutions in symmetric int8 / fp8 are also offered as cuDNN 8-bit graphs and as Kiln's own 8-bit
// convolution kernel (quantized_conv_graph.h, quantized_conv_kernel.h).
//
// Tactics: the heuristic's top candidates at the max shapes, "cublaslt.int8gemm.<storage>.h0".. /
// "cublaslt.fp8gemm[.fused].<storage>.h0".. (storage: the float type of its activations), each
// carrying its algorithm; a step validates it for each shape it meets and asks the heuristic again
// where it no longer fits.
#include "../../../builder/conversion_layers.h"
#include "../../../ops/fused.h"
#include "../../../ops/quantized.h"
#include "../../common/conv_geometry.h"
#include "../cublaslt_matmul.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"
#include "../workspace_math.h"
#include "quantized_conv_graph.h"
#include "quantized_gemm_plan.h"

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

constexpr size_t kX = 0, kResidual = 3;

// One launch shape: the product's rows and how X becomes its operand.
struct ProductShape {
  int64_t rows = 0, plane = 1;
  bool im2col = false;  // else X is read as [rows, depth] (a matmul, or a 1x1 channels-last convolution)
  k::Im2col gather;
  bool empty = false;
};

// The workspace: X's operand, then the sums, then cuBLASLt's.
struct Workspace {
  uint64_t operand = 0, sums = 0, cublas = 0;
  uint64_t sumsAt() const { return operand; }
  uint64_t cublasAt() const { return operand + sums; }
  uint64_t total() const { return operand + sums + cublas; }
};

const std::string kFusedTag = ".fused";

// The float storage of the layer's activations (quantized::kFloatStorage; fp32 when it has none).
DataType floatStorageOf(const Layer& layer) { return activationStorageOf(layer, Precision::kINT8); }

std::string tacticBase(const Layer& layer, bool fused) {
  const bool fp8 = quantized::precisionOf(layer) == Precision::kFP8;
  const std::string storage = layer.attrString(quantized::kFloatStorage, "fp32");
  return std::string("cublaslt.") + (fp8 ? "fp8gemm" : "int8gemm") + (fused ? kFusedTag : "") + "." + storage;
}

// The epilogue of the fused fp8 product, where the layer (in its storage) can have one.
std::optional<cublasLtEpilogue_t> fusedEpilogueOf(const Layer& layer, const QuantizedGemmPlan& plan) {
  if (floatStorageOf(layer) == DataType::kFloat32) return std::nullopt;  // fp16 / bf16 outputs only
  return fusedFp8Epilogue(plan, layer.hasInput(kResidual), layer.hasInput(quantized::kOutputScaleInput));
}

// How a fused product takes its per-channel scales: cuBLASLt's outer-vector scales on the weights
// alone, or on both operands (the activations' all ones) where it takes them only in pairs, or as
// the product's alpha where every channel has the same one (fp8 MatMul weights have one scale for
// the tensor: then cuBLASLt offers its whole list of fp8 GEMMs, not one). Stored as the
// algorithm's variant; 0: no fused product.
enum FusedScales : uint32_t { kNotFused = 0, kColumnScales = 1, kColumnAndRowScales = 2, kUniformScale = 3 };
// The variant's bit for an fp8 product that accumulates fast (GemmShape::fastAccumulation): tactic
// ids ".fa.h<i>", timed beside the exact ones.
constexpr uint32_t kFastAccumulation = 16;

// Whether every channel's dequantization multiplier is the same.
bool uniform(const std::vector<float>& multipliers) {
  return !multipliers.empty() &&
         std::all_of(multipliers.begin(), multipliers.end(), [&](float m) { return m == multipliers.front(); });
}

// The product into int32 / fp32 sums, or (with a fused epilogue) straight into the output.
GemmShape gemmShapeOf(const QuantizedGemmPlan& plan, int64_t rows, std::optional<cublasLtEpilogue_t> fused,
                      FusedScales scales, DataType storage, bool fastAccumulation) {
  GemmShape g;
  g.fastAccumulation = plan.fp8 && fastAccumulation;
  g.m = rows, g.n = fused ? plan.channels : plan.paddedChannels, g.k = plan.paddedDepth;
  g.transB = true;  // W' is [N, K]: cuBLASLt's "TN" product
  g.abType = plan.fp8 ? CUDA_R_8F_E4M3 : CUDA_R_8I;
  g.cdType = fused ? *cublasTypeOf(storage) : plan.fp8 ? CUDA_R_32F : CUDA_R_32I;
  g.compute = plan.fp8 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32I;
  if (fused) {
    g.epilogue = *fused;
    g.columnScales = scales != kUniformScale;
    g.rowScales = scales == kColumnAndRowScales;
  }
  return g;
}

// The product of X at `xDims` (linear or channels-last as `xLast` says).
ProductShape productShapeOf(const Layer& layer, const QuantizedGemmPlan& plan, const std::vector<int64_t>& xDims,
                            bool xLast) {
  ProductShape s;
  if (!plan.conv) {
    if (xDims.empty() || xDims.back() != plan.depth)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": A " + dimsToString(xDims) + " does not have " +
                                                   std::to_string(plan.depth) + " columns, B's rows");
    s.rows = elementCount(xDims) / plan.depth;
    s.empty = s.rows == 0;
    return s;
  }
  const std::vector<int64_t> wDims{plan.channels, plan.depth / (plan.kernelH * plan.kernelW), plan.kernelH,
                                   plan.kernelW};
  if (xDims.size() != 4 || xDims[1] != wDims[1])
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": X " + dimsToString(xDims) + " does not have the " +
                                                 std::to_string(wDims[1]) + " channels of its weights");
  const kernels::ConvShape shape = forwardConvShape(fused::baseLayer(layer), xDims, wDims);
  const kernels::SpatialWindow& w = shape.window;  // H and W at spatial indices 1 and 2
  k::Im2col& g = s.gather;
  g.batch = xDims[0], g.channels = xDims[1], g.inH = w.in[1], g.inW = w.in[2], g.outH = w.out[1], g.outW = w.out[2];
  g.kernelH = w.kernel[1], g.kernelW = w.kernel[2], g.strideH = w.stride[1], g.strideW = w.stride[2];
  g.dilationH = w.dilation[1], g.dilationW = w.dilation[2], g.padTop = w.padBegin[1], g.padLeft = w.padBegin[2];
  g.columns = plan.paddedDepth;
  g.channelsLast = xLast;
  s.rows = g.rows(), s.plane = g.outH * g.outW;
  const bool pointwise = g.kernelH == 1 && g.kernelW == 1 && g.strideH == 1 && g.strideW == 1 && g.padTop == 0 &&
                         g.padLeft == 0 && g.outH == g.inH && g.outW == g.inW;
  s.im2col = !(pointwise && xLast);
  s.empty = s.rows == 0 || plan.channels == 0;
  return s;
}

Workspace workspaceOf(const QuantizedGemmPlan& plan, const ProductShape& s, bool operandInPlace, uint64_t cublas) {
  return {operandInPlace ? 0 : alignUp(uint64_t(s.rows * plan.paddedDepth)),
          alignUp(uint64_t(s.rows * plan.paddedChannels) * 4), cublas};
}

struct ShapeEntry {
  DeviceCopy rowOnes;  // a fused product's row scales, where it needs them (kColumnAndRowScales)
  LayerShapes inputDims;
  DataType xType = DataType::kUndefined;
  ProductShape shape;
  bool operandInPlace = false;  // X is already the operand: int8, 1x1 channels-last, no padding
  std::unique_ptr<LtGemm> gemm;
  cublasLtMatmulAlgo_t algo{};
  uint64_t cublasBytes = 0;
};

class QuantizedState : public StepState {
 public:
  std::vector<std::unique_ptr<ShapeEntry>> shapes;
};

template <class T>
DeviceCopy upload(CudaDevice& device, const std::vector<T>& values) {
  return values.empty() ? DeviceCopy() : DeviceCopy(device.allocator, values.data(), values.size() * sizeof(T));
}

DataType declaredX(const LayerSignature& signature) {
  return signature.inputs.empty() || !signature.inputs[kX] ? DataType::kFloat32 : signature.inputs[kX]->dtype;
}

class QuantizedGemmStep : public CudaStep {
 public:
  QuantizedGemmStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device, DataType::kUndefined, quantizedPlannedInputs()),
        plan_(planQuantizedGemm(layer, signature.weights(), declaredX(signature))),
        stored_(decodeAlgo(tactic.payload)),
        xLast_(plan_.conv && tactic.inputFormat(kX) == TensorFormat::kNHWC),
        residualLast_(plan_.conv && tactic.inputFormat(kResidual) == TensorFormat::kNHWC),
        yLast_(plan_.conv && tactic.outputFormat == TensorFormat::kNHWC),
        hasResidual_(layer.hasInput(kResidual)),
        storage_(floatStorageOf(layer)),
        name_(layer.describe()) {
    weights_ = upload(device, plan_.weights);
    multipliers_ = upload(device, plan_.multipliers);
    correction_ = upload(device, plan_.correction);
    bias_ = upload(device, plan_.bias);
    // The fused product writes the output as its rows: channels-last (a convolution's output and
    // residual NHWC).
    const uint32_t variant = stored_ ? stored_->variant : 0;
    fastAccumulation_ = (variant & kFastAccumulation) != 0;
    const FusedScales scales = FusedScales(variant & ~kFastAccumulation);
    if (scales != kNotFused && tactic.id.find(kFusedTag + ".") != std::string::npos &&
        (!plan_.conv || (yLast_ && (!hasResidual_ || residualLast_)))) {
      fused_ = fusedEpilogueOf(layer, plan_);
      fusedScales_ = scales;
    }
    if (fused_ && !plan_.bias.empty())  // the bias in the output's type, as cuBLASLt reads it
      narrowBias_ = deviceVector(device.allocator, plan_.bias, storage_);
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.empty()) return 0;
    const ProductShape s = productShapeOf(layer_, plan_, inputs[kX].dims, xLast_);
    return s.empty ? 0
                   : workspaceOf(plan_, s, false, stored_ ? stored_->workspaceBytes : kCublasWorkspaceBytes).total();
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<QuantizedState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<QuantizedState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    ShapeEntry& entry = shapeFor(*state, args);
    if (entry.shape.empty) return;
    const ProductShape& s = entry.shape;
    const Workspace l = workspaceOf(plan_, s, entry.operandInPlace, entry.cublasBytes);
    if (args.workspaceBytes < l.total())
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(l.total()) + " it needs");
    char* workspace = static_cast<char*>(args.workspace);
    const cudaStream_t stream_ = streamOf(stream);
    const void* x = input(args, kX);
    const k::ElementType xType = elementType(args.inputs[kX]);
    const void* operand = x;
    if (!entry.operandInPlace) {
      if (s.im2col)
        check(k::quantizedIm2col(x, xType, s.gather, plan_.activation, workspace, stream_), "quantizing its input");
      else
        check(k::quantizeGemmOperand(x, xType, s.rows, plan_.depth, plan_.paddedDepth, plan_.activation, workspace,
                                     stream_),
              "quantizing its input");
      operand = workspace;
    }
    if (fused_) {
      const void* residual = hasResidual_ ? input(args, kResidual) : nullptr;
      entry.gemm->setColumnScales(static_cast<const float*>(multipliers_.get()));
      entry.gemm->setRowScales(static_cast<const float*>(entry.rowOnes.get()));
      const float alpha = fusedScales_ == kUniformScale ? plan_.multipliers.front() : 1.0f;
      entry.gemm->run(cublasLtHandle(device_), entry.algo, alpha, operand, weights_.get(), residual ? 1.0f : 0.0f,
                      residual ? residual : args.outputs[0].data, args.outputs[0].data, narrowBias_.get(),
                      workspace + l.cublasAt(), entry.cublasBytes, stream_, name_);
      return;
    }
    void* sums = workspace + l.sumsAt();
    entry.gemm->run(cublasLtHandle(device_), entry.algo, 1.0f, operand, weights_.get(), 0.0f, sums, sums, nullptr,
                    workspace + l.cublasAt(), entry.cublasBytes, stream_, name_);
    k::DequantizeEpilogue e;
    e.sums = sums;
    e.integerSums = !plan_.fp8;
    e.sumStride = plan_.paddedChannels;
    e.rows = s.rows, e.channels = plan_.channels, e.plane = s.plane;
    e.channelsFirst = plan_.conv && !yLast_;
    e.residualChannelsFirst = plan_.conv && !residualLast_;
    e.correction = static_cast<const int32_t*>(correction_.get());
    e.multipliers = static_cast<const float*>(multipliers_.get());
    e.bias = static_cast<const float*>(bias_.get());
    if (hasResidual_) {
      e.residual = input(args, kResidual);
      e.residualType = elementType(args.inputs[kResidual]);
      e.residualScale = plan_.residualScale;
    }
    e.residualBeforeActivation = plan_.epilogue.residualBeforeActivation;
    e.activation = plan_.epilogue.activation, e.alpha = plan_.epilogue.alpha, e.beta = plan_.epilogue.beta;
    e.outputScale = plan_.outputScale, e.outputZero = plan_.outputZero;
    check(k::dequantizeEpilogue(e, args.outputs[0].data, elementType(args.outputs[0]), stream_),
          "dequantizing its product");
  }

 private:
  ShapeEntry& shapeFor(QuantizedState& state, const StepArgs& args) const {
    const DataType xType = args.inputs[kX].dtype;
    for (auto& entry : state.shapes)
      if (entry->xType == xType && sameDims(entry->inputDims, args.inputs)) return *entry;
    // First launch at these dims: the product and its algorithm, once.
    auto entry = std::make_unique<ShapeEntry>();
    for (const TensorView& view : args.inputs) entry->inputDims.push_back(view.dims);
    entry->xType = xType;
    entry->shape = productShapeOf(layer_, plan_, args.inputs[kX].dims, xLast_);
    entry->operandInPlace = !plan_.fp8 && xType == DataType::kInt8 && !plan_.activation.unsignedQ &&
                            !entry->shape.im2col && plan_.depth == plan_.paddedDepth;
    if (!entry->shape.empty) {
      entry->gemm = std::make_unique<LtGemm>(
          gemmShapeOf(plan_, entry->shape.rows, fused_, fusedScales_, storage_, fastAccumulation_));
      if (fused_ && fusedScales_ == kColumnAndRowScales)
        entry->rowOnes = upload(device_, std::vector<float>(size_t(entry->shape.rows), 1.0f));
      cublasLtHandle_t handle = cublasLtHandle(device_);
      const uint64_t budget = stored_ ? stored_->workspaceBytes : kCublasWorkspaceBytes;
      std::optional<uint64_t> needs;
      if (stored_) needs = entry->gemm->check(handle, stored_->algo);
      if (needs && *needs <= budget) {
        entry->algo = stored_->algo;
        entry->cublasBytes = *needs;
      } else {
        const auto results = entry->gemm->heuristics(handle, 1, budget, 256);
        if (results.empty())
          throw Error(ErrorCode::kUnsupported, name_ + ": cuBLASLt has no algorithm for its " +
                                                   entry->gemm->shape().describe() + " product within " +
                                                   std::to_string(budget) + " bytes of workspace");
        entry->algo = results[0].algo;
        entry->cublasBytes = results[0].workspaceSize;
      }
    }
    state.shapes.push_back(std::move(entry));
    return *state.shapes.back();
  }

  QuantizedGemmPlan plan_;
  std::optional<StoredAlgo> stored_;
  bool xLast_, residualLast_, yLast_, hasResidual_;
  DataType storage_;
  std::optional<cublasLtEpilogue_t> fused_;  // the whole epilogue in cuBLASLt (fused fp8 tactics)
  FusedScales fusedScales_ = kNotFused;
  bool fastAccumulation_ = false;
  std::string name_;
  DeviceCopy weights_, multipliers_, correction_, bias_, narrowBias_;
};

// The heuristic's candidates at the max shapes, each its own tactic: the fused fp8 products first
// (where the layer has one), then those into sums.
std::vector<Tactic> quantizedTactics(const Layer& layer, Precision, const LayerInputs& inputs, CudaDevice& device) {
  const bool conv = layer.opType == quantized::kQuantizedConv;
  Tactic plain;
  plain.id = tacticBase(layer, false);
  plain.workspaceBytes = kCublasWorkspaceBytes;
  plain.takesChannelsLast = conv;
  if (inputs.dims.empty() || inputs.dims[kX].empty()) return {plain};
  // cuDNN's int8 convolution graphs first (no im2col copy, the epilogue in the kernel), where they apply.
  std::vector<Tactic> tactics = quantizedGraphConvTactics(layer, inputs, device);
  try {
    const DataType xType = inputs.types.empty() ? DataType::kFloat32 : inputs.types[kX];
    const QuantizedGemmPlan plan = planQuantizedGemm(layer, inputs.weights, xType);
    // Sized for the im2col layout, which covers the 1x1 channels-last one.
    const ProductShape s = productShapeOf(layer, plan, inputs.dims[kX], false);
    if (s.empty) return {plain};
    plain.workspaceBytes = workspaceOf(plan, s, false, kCublasWorkspaceBytes).total();
    const auto fused = fusedEpilogueOf(layer, plan);
    // One candidate list per form: the heuristic's algorithms, each its own tactic.
    auto offer = [&](FusedScales scales) {
      const bool fuse = scales != kNotFused;
      bool any = false;
      for (const bool fast : plan.fp8 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
        LtGemm gemm(gemmShapeOf(plan, s.rows, fuse ? fused : std::nullopt, scales, floatStorageOf(layer), fast));
        const auto results =
            gemm.heuristics(cublasLtHandle(device), inputs.candidateBudget, kCublasWorkspaceBytes, 256);
        for (size_t i = 0; i < results.size(); ++i) {
          Tactic& t = tactics.emplace_back(plain);
          t.id = tacticBase(layer, fuse) + (fast ? ".fa" : "") + ".h" + std::to_string(i);
          t.workspaceBytes = workspaceOf(plan, s, false, results[i].workspaceSize).total();
          const uint32_t variant = uint32_t(scales) | (fast ? kFastAccumulation : 0);
          t.payload = encodeAlgo(StoredAlgo{results[i].algo, results[i].workspaceSize, 256, variant});
        }
        any = any || !results.empty();
      }
      return any;
    };
    // The fused product first, in the first scale form cuBLASLt takes (it answers INVALID_VALUE
    // for one it lacks), then the product into sums.
    if (fused)
      for (const FusedScales scales : {kUniformScale, kColumnScales, kColumnAndRowScales}) {
        if (scales == kUniformScale && !uniform(plan.multipliers)) continue;
        try {
          if (offer(scales)) break;
        } catch (const Error&) {  // cuBLASLt lacks this scale form: the next one
        }
      }
    offer(kNotFused);
  } catch (const Error&) {
    // The step meets the same problem at its first launch and reports it naming the layer.
  }
  if (std::none_of(tactics.begin(), tactics.end(), [](const Tactic& t) { return !isQuantizedGraphConvTactic(t.id); }))
    tactics.push_back(plain);
  return tactics;
}

SupportVerdict quantizedTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto why = quantizedGemmRefusal(layer, tensors)) return {false, *why};
  return {};
}

SupportVerdict quantizedLayer(const Layer& layer, Precision) {
  if (auto why = quantizedGemmRefusal(layer, LayerSignature{})) return {false, *why};
  return {};
}

}  // namespace

void registerQuantizedCudaOps(CudaOpRegistry& registry) {
  CudaOp op = stepOp<QuantizedGemmStep>(quantizedTensors);
  op.instantiate = [](const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                      CudaDevice& device) -> std::unique_ptr<Step> {
    if (isQuantizedGraphConvTactic(tactic.id)) return makeQuantizedGraphConvStep(layer, tactic, signature, device);
    return std::make_unique<QuantizedGemmStep>(layer, tactic, signature, device);
  };
  op.tactics = quantizedTactics;
  op.supportsLayer = quantizedLayer;
  // A convolution gathers X and reads the residual in either layout, and writes either.
  op.channelsLastInputs = [](const Layer& layer, const std::string&) -> std::vector<size_t> {
    if (layer.opType != quantized::kQuantizedConv) return {};
    return {kX, kResidual};
  };
  registry.add(fused::kDomain, quantized::kQuantizedConv, op);
  registry.add(fused::kDomain, quantized::kQuantizedMatMul, op);
}

}  // namespace kiln::cuda
