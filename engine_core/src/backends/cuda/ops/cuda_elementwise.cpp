// Elementwise ops on the GPU: math functions and activations, broadcasting arithmetic,
// comparisons and logic, Pow, Where, Clip, Not, IsNaN, IsInf and the variadic Sum/Mean/Min/Max,
// each one kernel from kernels/cuda/elementwise with the CPU's op choice for the layer.
#include "../../../ops/elementwise.h"
#include "../../common/elementwise_ops.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"
#include "../workspace_math.h"

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

// The layout of a binary layer's tensors: input k and the output channels-last as bound.
struct BinaryFormats {
  bool in[2] = {false, false};
  bool out = false;
};

class BinaryStep : public CudaStep {
 public:
  BinaryStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device),
        op_(*binaryOpOf(layer)),
        formats_{{tactic.inputFormat(0) == TensorFormat::kNHWC, tactic.inputFormat(1) == TensorFormat::kNHWC},
                 tactic.outputFormat == TensorFormat::kNHWC} {}

  // An input whose layout is not the output's (and whose bytes differ between layouts) is re-laid
  // out into the workspace first.
  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override {
    if (inputs.size() < 2 || outputs.empty()) return 0;
    uint64_t bytes = 0;
    for (size_t k = 0; k < 2; ++k)
      if (needsRelayout(k, inputs[k].dims, outputs[0].dims))
        bytes += alignUp(uint64_t(inputs[k].elementCount()) * kernels::cuda::elementBytes(elementType(inputs[k])));
    return bytes;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    const bool channelsLast = outputChannelsLast(out.dims);
    std::vector<int64_t> dims[2] = {args.inputs[0].dims,
                                    alignLegacyBroadcast(layer_, args.inputs[0].dims.size(), args.inputs[1].dims)};
    const void* data[2] = {input(args, 0), input(args, 1)};
    char* workspace = static_cast<char*>(args.workspace);
    for (size_t k = 0; k < 2; ++k) {
      if (needsRelayout(k, args.inputs[k].dims, out.dims)) {
        const std::vector<int64_t> d = asRank4(dims[k]);
        const k::ElementType type = elementType(args.inputs[k]);
        check(channelsLast ? k::nchwToNhwc(data[k], workspace, d[0], d[1], d[2], d[3], type, streamOf(stream))
                           : k::nhwcToNchw(data[k], workspace, d[0], d[1], d[2], d[3], type, streamOf(stream)),
              k == 0 ? "re-laying out its first input" : "re-laying out its second input");
        data[k] = workspace;
        workspace += alignUp(uint64_t(args.inputs[k].elementCount()) * k::elementBytes(type));
      }
      // [N, C, H, W] as laid out channels-last; one pixel or one channel: the same bytes either way.
      if (channelsLast) dims[k] = channelsLastOrder(asRank4(dims[k]));
    }
    const std::vector<int64_t> outDims = channelsLast ? channelsLastOrder(out.dims) : out.dims;
    check(k::launchBinary(op_, data[0], dims[0], data[1], dims[1], out.data, outDims, elementType(args.inputs[0]),
                          streamOf(stream)));
  }

 private:
  bool outputChannelsLast(const std::vector<int64_t>& outDims) const { return formats_.out && outDims.size() == 4; }

  // Whether input k's bytes are not laid out as the output's: bound in the other layout, with more
  // than one pixel and more than one channel.
  bool needsRelayout(size_t k, const std::vector<int64_t>& dims, const std::vector<int64_t>& outDims) const {
    const bool inLast = formats_.in[k] && dims.size() == 4;
    if (inLast == outputChannelsLast(outDims) || dims.size() > 4) return false;
    const std::vector<int64_t> d = asRank4(k == 0 ? dims : alignLegacyBroadcast(layer_, outDims.size(), dims));
    return d[2] * d[3] > 1 && d[1] > 1;
  }

  kernels::BinaryOp op_;
  BinaryFormats formats_;
};

// Add, Sub, Mul and Div read 4-D inputs channels-last (and write their output so): a
// squeeze-and-excitation scale (the [N, C, 1, 1] scale times the feature map, in either order)
// keeps MobileNet's and EfficientNet's channels-last chains whole.
std::vector<size_t> arithmeticChannelsLastInputs(const Layer& layer, const std::string&) {
  if (layer.inputs.size() != 2 || (layer.opsetVersion > 0 && layer.opsetVersion < 7)) return {};
  return {0, 1};
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
