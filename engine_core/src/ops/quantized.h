#pragma once
// Names shared by the INT8 quantization step (passes/quantize_layers.cpp), the quantized ops'
// schemas (ops/quantized.cpp) and their CPU kernels (backends/cpu/ops/quantized.cpp).
#include "fused.h"

namespace kiln::quantized {

inline constexpr const char* kQuantizedConv = "QuantizedConv";
inline constexpr const char* kQuantizedMatMul = "QuantizedMatMul";

// Inputs 0-3 sit where kiln.FusedConv / kiln.FusedMatMul have them (X, W, bias, residual), so the
// epilogue helpers read both alike; the scales follow.
inline constexpr size_t kActivationScaleInput = 4;
inline constexpr size_t kWeightScaleInput = 5;
inline constexpr size_t kInputCount = 6;

// The activation range of symmetric int8 quantization: q = saturate(round_half_even(x / scale)).
inline constexpr int kQuantizedMin = -128, kQuantizedMax = 127;

// Whether the layer is one of the quantized ops (its arithmetic is int8 whatever the build asked).
inline bool isQuantizedLayer(const Layer& layer) {
  return layer.domain == fused::kDomain && (layer.opType == kQuantizedConv || layer.opType == kQuantizedMatMul);
}

}  // namespace kiln::quantized
