// The integer ops on the GPU (kernels/cuda/integer): MatMulInteger, QLinearMatMul, ConvInteger,
// QLinearConv and DynamicQuantizeLinear. Geometry comes from the helpers the CPU uses
// (matMulGeometry, forwardConvShape), zero-point and scale counts are checked as the CPU checks
// them, and scales stored narrower than float32 (a half-precision engine) are widened in the
// workspace first, since the CPU requantizes in float32.
#include "../../common/conv_geometry.h"
#include "../../common/matmul_geometry.h"
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/elementwise/cast.h>
#include <kernels/cuda/integer/integer_math.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

class IntegerStep : public DataStep {
 public:
  using DataStep::DataStep;

  // Room to widen every float parameter input (scales) to float32.
  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    uint64_t bytes = 0;
    for (size_t i : floatParameters())
      if (i < inputs.size() && layer_.hasInput(i)) bytes += workspaceAligned(uint64_t(inputs[i].elementCount()) * sizeof(float));
    return bytes;
  }

 protected:
  virtual std::vector<size_t> floatParameters() const { return {}; }

  // Input i (one of floatParameters) as float32 on the device: itself, or widened into the
  // workspace region it owns.
  const float* floatInput(const StepArgs& args, size_t i, cudaStream_t stream) const {
    if (!layer_.hasInput(i)) return nullptr;
    if (inputType(args, i) == DataType::kFloat32) return static_cast<const float*>(input(args, i));
    char* region = static_cast<char*>(args.workspace);
    for (size_t j : floatParameters()) {
      if (j == i) break;
      if (layer_.hasInput(j)) region += workspaceAligned(uint64_t(args.inputs[j].elementCount()) * sizeof(float));
    }
    check(k::launchCast(input(args, i), elementType(inputType(args, i)), region, k::ElementType::kFloat32,
                        args.inputs[i].elementCount(), stream),
          "widening a scale to float32");
    return reinterpret_cast<const float*>(region);
  }

  k::QuantOperand operand(const StepArgs& args, size_t data, size_t zero, int64_t allowedCount,
                          const char* what) const {
    k::QuantOperand q;
    q.data = input(args, data);
    q.type = elementType(inputType(args, data));
    if (layer_.hasInput(zero)) {
      q.zero = input(args, zero);
      q.zeroCount = countOf(args, zero, allowedCount, what);
      if (inputType(args, zero) != inputType(args, data))
        throw Error(ErrorCode::kInvalidModel, layer_.describe() + ": the zero point ('" + layer_.inputs[zero] +
                                                  "') must have the type of '" + layer_.inputs[data] + "'");
    }
    return q;
  }

  // Input i's element count, which must be 1 or `allowed`.
  int64_t countOf(const StepArgs& args, size_t i, int64_t allowed, const char* what) const {
    const int64_t count = args.inputs[i].elementCount();
    if (count != 1 && count != allowed)
      throw Error(ErrorCode::kInvalidModel, layer_.describe() + ": input " + std::to_string(i) + " ('" +
                                                layer_.inputs[i] + "') holds " + std::to_string(count) +
                                                " values; expected 1 or " + std::to_string(allowed) + " (" + what + ")");
    return count;
  }
};

k::IntegerMatMulShape matMulShape(const Layer& layer, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const MatMulGeometry g = matMulGeometry(a, b);
  if (g.batchDims.size() > size_t(k::kMaxIntegerBatchRank))
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": more than 8 batch dims");
  k::IntegerMatMulShape s;
  s.M = g.M, s.N = g.N, s.K = g.K;
  s.batchRank = int(g.batchDims.size());
  for (size_t d = 0; d < g.batchDims.size(); ++d) {
    s.batchDims[d] = g.batchDims[d];
    s.aStrides[d] = g.aStrides[d];
    s.bStrides[d] = g.bStrides[d];
  }
  return s;
}

// MatMulInteger (A, B, a_zero_point, b_zero_point) and QLinearMatMul (a, a_scale, a_zero_point,
// b, b_scale, b_zero_point, y_scale, y_zero_point).
class IntegerMatMulStep : public IntegerStep {
 public:
  using IntegerStep::IntegerStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const cudaStream_t s = streamOf(stream);
    const bool qlinear = layer_.opType == "QLinearMatMul";
    const size_t a = 0, b = qlinear ? 3 : 1;
    const k::IntegerMatMulShape shape = matMulShape(layer_, args.inputs[a].dims, args.inputs[b].dims);
    const k::QuantOperand qa = operand(args, a, 2, shape.M, "one per row of A");
    const k::QuantOperand qb = operand(args, b, qlinear ? 5 : 3, shape.N, "one per column of B");
    if (!qlinear)
      return check(k::integerMatMul(qa, qb, shape, static_cast<int32_t*>(args.outputs[0].data), s));
    k::MatMulRequantize r;
    r.aScale = floatInput(args, 1, s);
    r.aScaleCount = countOf(args, 1, shape.M, "one per row of A");
    r.bScale = floatInput(args, 4, s);
    r.bScaleCount = countOf(args, 4, shape.N, "one per column of B");
    r.yScale = floatInput(args, 6, s);
    r.yZero = input(args, 7);
    r.yType = elementType(args.outputs[0]);
    check(k::qlinearMatMul(qa, qb, shape, r, args.outputs[0].data, s));
  }

 private:
  std::vector<size_t> floatParameters() const override {
    return layer_.opType == "QLinearMatMul" ? std::vector<size_t>{1, 4, 6} : std::vector<size_t>{};
  }
};

k::IntegerConvShape convShape(const Layer& layer, const std::vector<int64_t>& x, const std::vector<int64_t>& w) {
  const kernels::ConvShape c = forwardConvShape(layer, x, w);
  k::IntegerConvShape s;
  s.batch = c.batch, s.inChannels = c.inChannels, s.outChannels = c.outChannels, s.group = c.group;
  for (int a = 0; a < k::kIntegerConvSpatialRank; ++a) {
    s.in[a] = c.window.in[a];
    s.out[a] = c.window.out[a];
    s.kernel[a] = c.window.kernel[a];
    s.stride[a] = c.window.stride[a];
    s.dilation[a] = c.window.dilation[a];
    s.padBegin[a] = c.window.padBegin[a];
  }
  return s;
}

// ConvInteger (x, w, x_zero_point, w_zero_point) and QLinearConv (x, x_scale, x_zero_point, w,
// w_scale, w_zero_point, y_scale, y_zero_point, B).
class IntegerConvStep : public IntegerStep {
 public:
  using IntegerStep::IntegerStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const cudaStream_t s = streamOf(stream);
    const bool qlinear = layer_.opType == "QLinearConv";
    const size_t w = qlinear ? 3 : 1;
    const k::IntegerConvShape shape = convShape(layer_, args.inputs[0].dims, args.inputs[w].dims);
    const k::QuantOperand qx = operand(args, 0, 2, 1, "one for the whole input");
    const k::QuantOperand qw = operand(args, w, qlinear ? 5 : 3, shape.outChannels, "one per output channel");
    if (!qlinear) return check(k::integerConv(qx, qw, shape, static_cast<int32_t*>(args.outputs[0].data), s));
    k::ConvRequantize r;
    r.xScale = floatInput(args, 1, s);
    r.wScale = floatInput(args, 4, s);
    r.wScaleCount = countOf(args, 4, shape.outChannels, "one per output channel");
    r.yScale = floatInput(args, 6, s);
    r.yZero = layer_.hasInput(7) ? input(args, 7) : nullptr;
    if (layer_.hasInput(8)) {
      if (inputType(args, 8) != DataType::kInt32 || args.inputs[8].elementCount() != shape.outChannels)
        throw Error(ErrorCode::kInvalidModel, layer_.describe() + ": the bias must be int32 with one value per "
                                                                  "output channel");
      r.bias = static_cast<const int32_t*>(input(args, 8));
    }
    r.yType = elementType(args.outputs[0]);
    check(k::qlinearConv(qx, qw, shape, r, args.outputs[0].data, s));
  }

 private:
  std::vector<size_t> floatParameters() const override {
    return layer_.opType == "QLinearConv" ? std::vector<size_t>{1, 4, 6} : std::vector<size_t>{};
  }
};

class DynamicQuantizeStep : public DataStep {
 public:
  using DataStep::DataStep;
  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override {
    return k::kDynamicQuantizeWorkspaceBytes + 2 * kWorkspaceAlignment;
  }
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& x = args.inputs[0];
    // Outputs the layer does not have are written to the workspace.
    char* spare = static_cast<char*>(args.workspace) + kWorkspaceAlignment;
    void* scale = layer_.hasOutput(1) ? args.outputs[1].data : spare;
    const k::ElementType scaleType = layer_.hasOutput(1) ? elementType(args.outputs[1]) : k::ElementType::kFloat32;
    auto* zeroPoint = static_cast<uint8_t*>(layer_.hasOutput(2) ? args.outputs[2].data : spare + 16);
    check(k::dynamicQuantizeLinear(input(args, 0), elementType(x), x.elementCount(),
                                   static_cast<uint8_t*>(args.outputs[0].data), scale, scaleType, zeroPoint,
                                   args.workspace, streamOf(stream)));
  }
};

bool eightBit(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

// The quantized operands (and their zero points) are int8 or uint8.
SupportVerdict eightBitOperands(const Layer& layer, const LayerSignature& tensors, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (i < tensors.inputs.size() && tensors.inputs[i] && !eightBit(tensors.inputs[i]->dtype))
      return {false, layer.opType + " with " + std::string(toString(tensors.inputs[i]->dtype)) + " input '" +
                         layer.inputs[i] + "' has no CUDA kernel (int8 / uint8)"};
  return {};
}

// Scales of a float type the kernels widen (not float64).
SupportVerdict floatScales(const Layer& layer, const LayerSignature& tensors, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (i < tensors.inputs.size() && tensors.inputs[i] && tensors.inputs[i]->dtype == DataType::kFloat64)
      return {false, layer.opType + " with a float64 scale has no CUDA kernel"};
  return {};
}

SupportVerdict integerMatMulTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (layer.opType == "QLinearMatMul")
    return firstRefusal({eightBitOperands(layer, tensors, {0, 2, 3, 5, 7}), floatScales(layer, tensors, {1, 4, 6})});
  return eightBitOperands(layer, tensors, {0, 1, 2, 3});
}

SupportVerdict integerConvTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  const Tensor* x = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (x && x->shape.hasRank() && (x->shape.rank() < 3 || x->shape.rank() > 5))
    return {false, layer.opType + " over " + std::to_string(int64_t(x->shape.rank()) - 2) +
                       " spatial axes has no CUDA kernel (1 to 3)"};
  if (layer.opType == "QLinearConv")
    return firstRefusal({eightBitOperands(layer, tensors, {0, 2, 3, 5, 7}), floatScales(layer, tensors, {1, 4, 6})});
  return eightBitOperands(layer, tensors, {0, 1, 2, 3});
}

SupportVerdict dynamicQuantizeTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  const Tensor* x = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (x && x->dtype == DataType::kFloat64) return {false, layer.opType + " on float64 has no CUDA kernel"};
  return floatData(layer, tensors);
}

}  // namespace

void registerIntegerMathCudaOps(CudaOpRegistry& registry) {
  registry.add("MatMulInteger", stepOp<IntegerMatMulStep>(integerMatMulTensors));
  registry.add("QLinearMatMul", stepOp<IntegerMatMulStep>(integerMatMulTensors));
  registry.add("ConvInteger", stepOp<IntegerConvStep>(integerConvTensors));
  registry.add("QLinearConv", stepOp<IntegerConvStep>(integerConvTensors));
  registry.add("DynamicQuantizeLinear", stepOp<DynamicQuantizeStep>(dynamicQuantizeTensors));
}

}  // namespace kiln::cuda
