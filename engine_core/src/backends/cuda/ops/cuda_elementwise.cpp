// Elementwise ops on the GPU: math functions and activations, broadcasting arithmetic,
// comparisons and logic, Pow, Where, Clip, Not, IsNaN, IsInf and the variadic Sum/Mean/Min/Max,
// each one kernel from kernels/cuda/elementwise with the CPU's op choice for the layer.
#include "../../../ops/elementwise.h"
#include "../../common/elementwise_ops.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"

#include <kernels/cuda/elementwise/binary.h>
#include <kernels/cuda/elementwise/unary.h>
#include <kernels/cuda/layout/reformat.h>

#include <algorithm>

#include <cstring>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

class UnaryStep : public CudaStep {
 public:
  UnaryStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device), choice_(*unaryOpOf(layer)) {}
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    check(k::launchUnary(choice_.op, input(args, 0), out.data, out.elementCount(), elementType(args.inputs[0]),
                         choice_.params, streamOf(stream)));
  }

 private:
  UnaryChoice choice_;
};

// [N, C, H, W] as laid out channels-last: [N, H, W, C].
std::vector<int64_t> channelsLastOrder(const std::vector<int64_t>& d) { return {d[0], d[2], d[3], d[1]}; }

// B's dims right-aligned to rank 4 ([C, 1, 1] -> [1, C, 1, 1]).
std::vector<int64_t> asRank4(std::vector<int64_t> d) {
  d.insert(d.begin(), 4 - std::min<size_t>(d.size(), 4), 1);
  return d;
}

class BinaryStep : public CudaStep {
 public:
  BinaryStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device),
        op_(*binaryOpOf(layer)),
        channelsLast_(tactic.inputFormat(0) == TensorFormat::kNHWC) {}

  // A channels-last A with a B that has more than one pixel: B re-laid out channels-last first.
  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (!channelsLast_ || inputs.size() < 2 || !bNeedsRelayout(inputs[1].dims)) return 0;
    return uint64_t(inputs[1].elementCount()) * kernels::cuda::elementBytes(elementType(inputs[1]));
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &a = args.inputs[0], &b = args.inputs[1], &out = args.outputs[0];
    // Before opset 7 B broadcasts along `axis` (and PRelu's slope along the channels), as on the CPU.
    std::vector<int64_t> aDims = a.dims, bDims = alignLegacyBroadcast(layer_, a.dims.size(), b.dims), outDims = out.dims;
    const void* bData = input(args, 1);
    if (channelsLast_) {  // A and the output are [N, H, W, C] in memory; B is linear
      aDims = channelsLastOrder(aDims);
      outDims = channelsLastOrder(outDims);
      const std::vector<int64_t> b4 = asRank4(bDims);
      if (bNeedsRelayout(b.dims)) {
        check(k::nchwToNhwc(bData, args.workspace, b4[0], b4[1], b4[2], b4[3], elementType(b), streamOf(stream)),
              "re-laying out its second input");
        bData = args.workspace;
      }
      bDims = channelsLastOrder(b4);  // one pixel: the same bytes in both layouts
    }
    check(k::launchBinary(op_, input(args, 0), aDims, bData, bDims, out.data, outDims, elementType(a),
                          streamOf(stream)));
  }

 private:
  bool bNeedsRelayout(const std::vector<int64_t>& dims) const {
    const std::vector<int64_t> b4 = asRank4(alignLegacyBroadcast(layer_, 4, dims));
    return b4[2] * b4[3] > 1 && b4[1] > 1;
  }

  kernels::BinaryOp op_;
  bool channelsLast_;
};

// Add, Sub, Mul and Div read a 4-D A channels-last (and write their output so): a
// squeeze-and-excitation scale ([N, C, 1, 1] times the feature map) keeps MobileNet's and
// EfficientNet's channels-last chains whole. B stays linear.
std::vector<size_t> arithmeticChannelsLastInputs(const Layer& layer, const std::string&) {
  if (layer.inputs.size() != 2 || (layer.opsetVersion > 0 && layer.opsetVersion < 7)) return {};
  return {0};
}

class PowStep : public CudaStep {
 public:
  using CudaStep::CudaStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &a = args.inputs[0], &b = args.inputs[1], &out = args.outputs[0];
    check(k::launchPow(input(args, 0), a.dims, elementType(a), input(args, 1), b.dims, elementType(b), out.data,
                       out.dims, streamOf(stream)));
  }
};

class WhereStep : public CudaStep {
 public:
  using CudaStep::CudaStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    check(k::launchWhere(input(args, 0), args.inputs[0].dims, input(args, 1), args.inputs[1].dims, input(args, 2),
                         args.inputs[2].dims, out.data, out.dims, elementType(out), streamOf(stream)));
  }
};

class VariadicStep : public CudaStep {
 public:
  VariadicStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device) {
    const std::string& op = layer.opType;
    op_ = op == "Sum" ? k::VariadicOp::kSum : op == "Mean" ? k::VariadicOp::kMean
          : op == "Min" ? k::VariadicOp::kMin : k::VariadicOp::kMax;
  }
  void enqueue(const StepArgs& args, Stream& stream) const override {
    std::vector<const void*> inputs;
    std::vector<std::vector<int64_t>> dims;
    for (size_t i = 0; i < layer_.inputs.size(); ++i) {
      if (!args.inputs[i].present()) continue;
      inputs.push_back(input(args, i));
      dims.push_back(args.inputs[i].dims);
    }
    const TensorView& out = args.outputs[0];
    check(k::launchVariadic(op_, inputs, dims, out.data, out.dims, elementType(out), streamOf(stream)));
  }

 private:
  k::VariadicOp op_;
};

// Clip's bounds are inputs since opset 11 (device data, a weight or an activation), attributes
// before; attributes are uploaded once as device scalars of the input's type.
class ClipStep : public CudaStep {
 public:
  ClipStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device) {
    if (layer.opsetVersion >= 11) return;
    const Tensor* in = signature.inputs.at(0);
    for (const char* bound : {"min", "max"}) {
      if (!layer.hasAttr(bound)) continue;
      HostTensor value(in->dtype, {});
      const float v = layer.attrFloat(bound);
      if (in->dtype == DataType::kFloat32) *value.data<float>() = v;
      else if (in->dtype == DataType::kFloat64) *value.data<double>() = v;
      else if (in->dtype == DataType::kFloat16) *value.data<kernels::Float16>() = kernels::Float16(v);
      else *value.data<kernels::BFloat16>() = kernels::BFloat16(v);
      (std::string(bound) == "min" ? lo_ : hi_) = DeviceCopy(device.allocator, value.rawData(), value.byteSize());
    }
  }
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    const void* lo = layer_.opsetVersion >= 11 ? (layer_.hasInput(1) ? input(args, 1) : nullptr) : (lo_ ? lo_.get() : nullptr);
    const void* hi = layer_.opsetVersion >= 11 ? (layer_.hasInput(2) ? input(args, 2) : nullptr) : (hi_ ? hi_.get() : nullptr);
    check(k::launchClip(input(args, 0), out.data, out.elementCount(), elementType(out), lo, hi, streamOf(stream)));
  }

 private:
  DeviceCopy lo_, hi_;
};

class PredicateStep : public CudaStep {
 public:
  using CudaStep::CudaStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    const cudaStream_t s = streamOf(stream);
    if (layer_.opType == "Not") return check(k::launchNot(input(args, 0), out.data, out.elementCount(), s));
    if (layer_.opType == "IsNaN")
      return check(k::launchIsNaN(input(args, 0), out.data, out.elementCount(), elementType(in), s));
    check(k::launchIsInf(input(args, 0), out.data, out.elementCount(), elementType(in),
                         layer_.attrInt("detect_positive", 1) != 0, layer_.attrInt("detect_negative", 1) != 0, s));
  }
};

bool isFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat64;
}

const std::initializer_list<DataType> kNumeric = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
    DataType::kInt16,   DataType::kInt32,   DataType::kInt64,    DataType::kUInt8,   DataType::kUInt16,
    DataType::kUInt32,  DataType::kUInt64,  DataType::kBool};

SupportVerdict numericTensors(const Layer&, Precision, const LayerSignature& tensors) {
  return firstRefusal({ranksWithinLimit(tensors), allOfTypes(tensors, kNumeric)});
}

SupportVerdict unaryTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  if (auto v = numericTensors(layer, precision, tensors); !v.supported) return v;
  const UnaryChoice choice = *unaryOpOf(layer);
  const Tensor* in = tensors.inputs.at(0);
  if (in && kernels::isFloatOnly(choice.op) && !isFloat(in->dtype))
    return {false, layer.opType + " on " + std::string(toString(in->dtype)) + " has no CUDA kernel"};
  return {};
}

}  // namespace

void registerElementwiseCudaOps(CudaOpRegistry& registry) {
  for (const char* name : {"Neg", "Abs", "Sign", "Relu", "Sqrt", "Reciprocal", "Exp", "Log", "Sin", "Cos", "Tan",
                           "Asin", "Acos", "Atan", "Sinh", "Cosh", "Tanh", "Asinh", "Acosh", "Atanh", "Erf",
                           "Floor", "Ceil", "Round", "Sigmoid", "Softplus", "Softsign", "HardSwish", "BitwiseNot",
                           "LeakyRelu", "Elu", "Celu", "ThresholdedRelu", "Selu", "HardSigmoid", "Shrink", "Gelu"})
    registry.add(name, stepOp<UnaryStep>(unaryTensors));
  for (const char* name : {"PRelu", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Mod", "BitShift", "Equal", "Less",
                           "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"})
    registry.add(name, stepOp<BinaryStep>(numericTensors));
  for (const char* name : {"Add", "Sub", "Mul", "Div"}) {
    CudaOp op = stepOp<BinaryStep>(numericTensors);
    op.channelsLastInputs = arithmeticChannelsLastInputs;
    op.channelsLastInAndOut = true;
    registry.add(name, op);
  }
  registry.add("Pow", stepOp<PowStep>(numericTensors));
  registry.add("Where", stepOp<WhereStep>(numericTensors));
  for (const char* name : {"Sum", "Mean", "Min", "Max"}) registry.add(name, stepOp<VariadicStep>(numericTensors));
  registry.add("Clip", stepOp<ClipStep>(numericTensors));
  for (const char* name : {"Not", "IsNaN", "IsInf"}) registry.add(name, stepOp<PredicateStep>(numericTensors));
}

}  // namespace kiln::cuda
