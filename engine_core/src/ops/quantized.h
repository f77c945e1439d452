#pragma once
// Names shared by the INT8 steps (passes/quantize_layers.cpp for calibrated builds,
// passes/fuse_qdq.cpp for Q/DQ models), the quantized ops' schemas (ops/quantized.cpp) and their
// CPU kernels (backends/cpu/ops/quantized.cpp).
#include "fused.h"

namespace kiln::quantized {

inline constexpr const char* kQuantizedConv = "QuantizedConv";
inline constexpr const char* kQuantizedMatMul = "QuantizedMatMul";

// Inputs 0-3 sit where kiln.FusedConv / kiln.FusedMatMul have them (X, W, bias, residual), so the
// epilogue helpers read both alike; the scales follow, then the optional zero points and the
// output's quantization (a Q/DQ model's QuantizeLinear after the layer).
inline constexpr size_t kActivationScaleInput = 4;
inline constexpr size_t kWeightScaleInput = 5;
inline constexpr size_t kActivationZeroPointInput = 6;
inline constexpr size_t kWeightZeroPointInput = 7;
inline constexpr size_t kOutputScaleInput = 8;
inline constexpr size_t kOutputZeroPointInput = 9;
inline constexpr size_t kMinInputCount = 6;
inline constexpr size_t kMaxInputCount = 10;

// The activation range of symmetric int8 quantization: q = saturate(round_half_even(x / scale)).
inline constexpr int kQuantizedMin = -128, kQuantizedMax = 127;

// Whether the layer is one of the quantized ops (its arithmetic is int8 whatever the build asked).
inline bool isQuantizedLayer(const Layer& layer) {
  return layer.domain == fused::kDomain && (layer.opType == kQuantizedConv || layer.opType == kQuantizedMatMul);
}

}  // namespace kiln::quantized
