// The conversion layers the builder inserts (ops/conversion.h) and ONNX's Cast / CastLike on the
// GPU: Copy between host and device memory on the stream, storage-type Cast and value Cast through
// one cast kernel, Reformat between NCHW and NHWC.
#include "../../../ir/tensor_placement.h"
#include "../../../ops/conversion.h"
#include "../../../ops/fused.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"

#include <kernels/cuda/elementwise/cast.h>
#include <kernels/cuda/layout/reformat.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

class CopyStep : public CudaStep {
 public:
  using CudaStep::CudaStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    stream.copy(args.outputs[0].data, input(args, 0), args.outputs[0].byteSize());
  }
};

// kiln.Cast, Cast and CastLike: the values of input 0 in the output's type.
class CastStep : public CudaStep {
 public:
  using CudaStep::CudaStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    check(k::launchCast(input(args, 0), elementType(in), out.data, elementType(out), out.elementCount(),
                        streamOf(stream)));
  }
};

class ReformatStep : public CudaStep {
 public:
  using CudaStep::CudaStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    const auto& d = out.dims;
    const auto from = parseTensorFormat(layer_.attrString(conversion::kFrom));
    const auto to = parseTensorFormat(layer_.attrString(conversion::kTo));
    if (from == to) return stream.copy(out.data, input(args, 0), out.byteSize());
    const auto launch = *to == TensorFormat::kNHWC ? k::nchwToNhwc : k::nhwcToNchw;
    check(launch(input(args, 0), out.data, d.at(0), d.at(1), d.at(2), d.at(3), elementType(in), streamOf(stream), 0));
  }
};

SupportVerdict castable(const Layer&, Precision, const LayerSignature& tensors) {
  for (const Tensor* t : tensors.inputs)
    if (t && !elementTypeOf(t->dtype)) return {false, "no CUDA cast from " + std::string(toString(t->dtype))};
  for (const Tensor* t : tensors.outputs)
    if (t && !elementTypeOf(t->dtype)) return {false, "no CUDA cast to " + std::string(toString(t->dtype))};
  return {};
}

}  // namespace

void registerConversionCudaOps(CudaOpRegistry& registry) {
  registry.add(fused::kDomain, conversion::kCopy, stepOp<CopyStep>());
  registry.add(fused::kDomain, conversion::kCast, stepOp<CastStep>(castable));
  registry.add(fused::kDomain, conversion::kReformat, stepOp<ReformatStep>(castable));
  registry.add("Cast", stepOp<CastStep>(castable));
  registry.add("CastLike", stepOp<CastStep>(castable));
}

}  // namespace kiln::cuda
