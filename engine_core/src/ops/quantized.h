#pragma once
// Names shared by the INT8 steps (passes/quantize_layers.cpp for calibrated builds,
// passes/fuse_qdq.cpp for Q/DQ models), the quantized ops' schemas (ops/quantized.cpp) and their
// CPU kernels (backends/cpu/ops/quantized.cpp).
#include "fused.h"

#include <kiln/builder_config.h>

#include <optional>
#include <string>

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
inline constexpr size_t kWeightBlockScaleInput = 10;  // fp4 only: the weights' e4m3 block scales
// int8 layers only: the float32 scalar scale of an int8 residual (input 3), present exactly when the
// residual is int8. The epilogue adds r = float(r_q) * r_scale, one fp32 multiply rounded to nearest
// (never fused with the add), where it adds a float residual: y = act(acc * m + bias + r) or
// act(acc * m + bias) + r (attribute residual_before_activation). An int8 chain's block output
// thus crosses to the next block's last convolution as one byte a value (passes/chain_int8_activations.cpp).
inline constexpr size_t kResidualScaleInput = 11;
inline constexpr size_t kResidualInput = 3;
inline constexpr size_t kMinInputCount = 6;
inline constexpr size_t kMaxInputCount = 12;

// The element type the layer multiplies in: "int8" (when absent), "fp8" (e4m3) or "fp4" (NVFP4's
// e2m1 with e4m3 scales per block of kFp4BlockSize along K); Precision's names.
inline constexpr const char* kPrecision = "precision";
inline constexpr int64_t kFp4BlockSize = 16;

// The storage type ("fp16" or "bf16"; absent: fp32) of the layer's float activations, where the
// builder runs it on a backend that keeps fp16 / bf16 tensors itself (the CUDA backend): in an fp16
// engine it reads and writes fp16 like its neighbours instead of fp32 through Cast layers.
inline constexpr const char* kFloatStorage = "float_storage";

// The activation range of symmetric int8 quantization: q = saturate(round_half_even(x / scale)).
inline constexpr int kQuantizedMin = -128, kQuantizedMax = 127;

// Whether the layer is one of the quantized ops (its arithmetic is int8, fp8 or fp4 whatever the
// build asked).
inline bool isQuantizedLayer(const Layer& layer) {
  return layer.domain == fused::kDomain && (layer.opType == kQuantizedConv || layer.opType == kQuantizedMatMul);
}

// Whether `p` is one of the quantized layers' element types.
inline bool isQuantizedPrecision(Precision p) {
  return p == Precision::kINT8 || p == Precision::kFP8 || p == Precision::kFP4;
}

// The kPrecision attribute's value for int8, fp8 and fp4 (Precision's names; spelled here because
// the op schemas' library does not link the builder's toString).
inline const char* precisionName(Precision p) {
  return p == Precision::kFP8 ? "fp8" : p == Precision::kFP4 ? "fp4" : "int8";
}

// A quantized layer's element type (its kPrecision attribute; int8 when absent); nullopt for a
// value that names none (a corrupt plan).
inline std::optional<Precision> precisionOf(const Layer& layer) {
  const std::string name = layer.attrString(kPrecision, "int8");
  for (Precision p : {Precision::kINT8, Precision::kFP8, Precision::kFP4})
    if (name == precisionName(p)) return p;
  return std::nullopt;
}

}  // namespace kiln::quantized
