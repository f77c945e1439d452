#pragma once
// The kernels around the tensor-core product of Kiln's int8 and fp8 layers (kiln.QuantizedConv /
// QuantizedMatMul on cuBLASLt): the activation quantized on entry into the product's 8-bit
// operand (for a convolution, gathered as im2col rows at the same time), and the dequantizing
// epilogue that turns the product's sums into the layer's output. The arithmetic is the CPU
// kernels' (kernels/cpu/quant/int8_layers.h, small_float_layers.h): q = saturate(round_half_even(
// x / scale) + zero) or e4m3(x / scale); y = act(float(acc) * x_scale * w_scale[c] + bias[c] (+ Z))
// (+ Z), quantized again when the layer has an output scale; an int8 residual Z is float(Z_q) * z_scale.
//
// int8 operands are signed: a uint8 activation enters as q - 128, and the product then needs
// (128 - zero) * sum_k w[k][c] added to its sums (an int8 one with a zero point, -zero * sum_k w),
// which the epilogue does with a per-channel correction: sum_k (q - zero) w = sum_k s w + (o - zero)
// sum_k w with s = q - o. Padding (image borders, columns past K) holds the value that contributes
// nothing: s = zero - o where the image is padded (x = 0 quantizes to the zero point), any value
// where the weights are 0 (the columns past K).
// float32, float16, bfloat16 activations; int8 / uint8 (int8 layers) and fp8 e4m3 (fp8 layers)
// already quantized. Asynchronous; no allocation; empty problems are a no-op.
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/common/host_device.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// How an activation becomes the product's 8-bit operand.
struct OperandQuantization {
  bool fp8 = false;        // e4m3(x / scale) (zero point 0), else int8
  float scale = 1;         // of float activations
  int32_t zero = 0;        // the int8 / uint8 zero point
  bool unsignedQ = false;  // uint8 quantization: the operand holds q - 128
  // The operand value of an activation of 0 (a padded pixel): zero - 128 or zero; 0 in fp8.
  KILN_HD int32_t paddingValue() const { return fp8 ? 0 : zero - (unsignedQ ? 128 : 0); }
};

// A row-major [rows, cols] activation as the operand [rows, paddedCols] (paddedCols >= cols; the
// extra columns are 0). x: float32, float16, bfloat16, or the quantization's own 8-bit type.
cudaError_t quantizeGemmOperand(const void* x, ElementType xType, int64_t rows, int64_t cols, int64_t paddedCols,
                                const OperandQuantization& q, void* operand, cudaStream_t stream);

// A 2-D convolution's input as im2col rows: row (n, oh, ow), column (kh * kernelW + kw) * channels
// + c, `columns` of them (>= kernelH * kernelW * channels; the rest 0). x is NCHW or NHWC.
struct Im2col {
  int64_t batch = 0, channels = 0, inH = 0, inW = 0, outH = 0, outW = 0;
  int64_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0;
  int64_t columns = 0;
  bool channelsLast = false;
  int64_t rows() const { return batch * outH * outW; }
};

cudaError_t quantizedIm2col(const void* x, ElementType xType, const Im2col& geometry, const OperandQuantization& q,
                            void* operand, cudaStream_t stream);

// The product's sums (int32 for int8 layers, float32 for fp8; row r's channels start at r *
// sumStride) into the output. Rows are (n, p) with `plane` pixels p an image (a matmul: plane 1):
// the output and the residual are [rows, channels] (channels-last), or [n, channels, plane] where
// their channelsFirst flag says so.
struct DequantizeEpilogue {
  const void* sums = nullptr;
  bool integerSums = true;
  int64_t sumStride = 0;  // 0: channels
  int64_t rows = 0, channels = 0, plane = 1;
  bool channelsFirst = false, residualChannelsFirst = false;
  const int32_t* correction = nullptr;  // [channels], added to integer sums; or null
  const float* multipliers = nullptr;   // [channels]: x_scale * w_scale[c]
  const float* bias = nullptr;          // [channels] or null
  const void* residual = nullptr;       // or null
  // float32 / float16 / bfloat16, or int8 (int8 layers): then the residual added is
  // __fmul_rn(float(r_q), residualScale) (engine_core/src/ops/quantized.h's kResidualScaleInput).
  ElementType residualType = ElementType::kFloat32;
  float residualScale = 1;
  bool residualBeforeActivation = true;
  Activation activation = Activation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu: alpha
  // An output of a quantized type (int8, uint8, fp8 e4m3) is quantize(value, outputScale, outputZero)
  // (the fp8 zero point as its code).
  float outputScale = 1;
  int32_t outputZero = 0;
};

// y: float32, float16, bfloat16, int8, uint8 or fp8 e4m3.
cudaError_t dequantizeEpilogue(const DequantizeEpilogue& e, void* y, ElementType yType, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
