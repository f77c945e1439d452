#pragma once
// Pieces the CPU kernels of kiln.QuantizedConv / kiln.QuantizedMatMul share: int8 in quantized.cpp,
// fp8 and fp4 in quantized_small_float.cpp (semantics: engine_core/src/ops/quantized.cpp).
#include <kernels/cpu/fused/epilogue.h>

#include "../cpu_kernel.h"

#include <cstdint>
#include <vector>

namespace kiln {

// Input i, a float32 scalar scale.
float scalarScale(const KernelContext& ctx, size_t i, const char* what);

// The int8 layers' pieces, shared by their reference kernels (quantized.cpp) and the oneDNN tactic
// (quantized_tactics.cpp), which must compute the same values.

// A float32 scale tensor with 1 or `count` values; its value count goes to `valueCount`.
const float* scaleValues(const KernelContext& ctx, size_t i, int64_t count, const char* what, int64_t& valueCount);

// How an operand is quantized: its scale, and its zero point's type and value (int8 0 when the
// layer has none and the operand is float; the operand's own type when it is already quantized).
struct Quantization {
  float scale = 1;
  DataType type = DataType::kInt8;
  int zero = 0;
};
Quantization quantizationOf(const KernelContext& ctx, size_t operand, size_t scale, size_t zeroPoint, const char* what);

// Operand i as 8-bit values of the quantization's type: its own data, or quantized from float
// (QuantizeLinear's rule) into `storage`, which holds its element count of bytes.
const void* eightBitOperand(const KernelContext& ctx, size_t i, const Quantization& q, const char* what,
                            uint8_t* storage);

// A kiln.QuantizedMatMul's operands: A's quantization, and B's: int8 weights (no zero point) with
// 1 or N column scales, or an operand quantized per tensor.
struct MatMulQuantization {
  Quantization a, b;
  bool bWeights = false;
  const float* bScales = nullptr;  // the weights' scales; null for an operand (b.scale then)
  int64_t bScaleCount = 1;
  const float* columnScales() const { return bScales ? bScales : &b.scale; }
};
MatMulQuantization matMulQuantization(const KernelContext& ctx, int64_t columns);

// Output 0 of a kiln.QuantizedMatMul from its exact sums acc [rows, columns]: dequantized, the
// epilogue, quantized again when the layer has y_scale.
void finishInt8MatMul(KernelContext& ctx, const MatMulQuantization& q, const int32_t* acc, int64_t rows,
                      int64_t columns);

// Where the layer writes its float32 results: the output itself, or a buffer that finish()
// quantizes into it (a layer with y_scale: int8, uint8 or fp8 e4m3 as y_zero_point is).
class FloatResult {
 public:
  explicit FloatResult(KernelContext& ctx);
  float* data() { return buffer_.empty() ? out_.data<float>() : buffer_.data(); }
  const HostTensor& output() const { return out_; }
  // The layer's epilogue (readEpilogue's), an int8 residual dequantized as quantized.h defines it
  // (float(z_q) * z_scale) into a buffer this result keeps.
  kernels::Epilogue epilogue();
  void finish();
  // A matmul's epilogue (bias C[n] of `columns`, activation, residual), then finish().
  void finishMatMul(int64_t columns);

 private:
  KernelContext& ctx_;
  HostTensor& out_;
  std::vector<float> buffer_, residual_;
};

// The fp8 and fp4 layers' kernels, called by the layers' one kernel for their precision.
void smallFloatConv(KernelContext& ctx);
void smallFloatMatMul(KernelContext& ctx);

}  // namespace kiln
