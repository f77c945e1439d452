// QuantizeLinear and DequantizeLinear on the GPU (kernels/cuda/quant): per-tensor or per-axis
// scales and zero points (weights or device data), computed in float as the CPU does.
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/quant/quantize.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

class QuantStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &scale = args.inputs[1], &y = args.outputs[0];
    // Per tensor for one scale, else one per position of 'axis'; the CPU has no blocked scales.
    const auto layout = k::quantLayout(x.dims, int(layer_.attrInt("axis", 1)), scale.dims, 0);
    if (!layout)
      throw Error(ErrorCode::kInvalidModel, layer_.describe() + ": a scale of shape " + dimsToString(scale.dims) +
                                                " fits neither per-tensor nor per-axis quantization of an input of shape " +
                                                dimsToString(x.dims));
    const void* zeroPoint = layer_.hasInput(2) ? input(args, 2) : nullptr;
    const cudaStream_t s = streamOf(stream);
    if (layer_.opType == "QuantizeLinear")
      check(k::quantizeLinear(input(args, 0), elementType(x), input(args, 1), elementType(scale), zeroPoint, y.data,
                              elementType(y), *layout, layer_.attrInt("saturate", 1) != 0, s));
    else
      check(k::dequantizeLinear(input(args, 0), elementType(x), input(args, 1), elementType(scale), zeroPoint, y.data,
                                elementType(y), *layout, s));
  }
};

// The kernels read float32, float16 and bfloat16 scales (and so write those, for DequantizeLinear).
SupportVerdict quantTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto v = ranksWithinLimit(tensors); !v.supported) return v;
  const Tensor* scale = tensors.inputs.size() > 1 ? tensors.inputs[1] : nullptr;
  if (scale && scale->dtype == DataType::kFloat64)
    return {false, layer.opType + " with a float64 scale has no CUDA kernel"};
  return {};
}

}  // namespace

void registerQuantCudaOps(CudaOpRegistry& registry) {
  registry.add("QuantizeLinear", stepOp<QuantStep>(quantTensors));
  registry.add("DequantizeLinear", stepOp<QuantStep>(quantTensors));
}

}  // namespace kiln::cuda
