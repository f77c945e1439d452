#pragma once
// Names shared by the fusion passes, the fused ops' schemas and their kernels (domain "kiln").
// The semantics of each fused op are documented at the top of ops/fused.cpp.
#include <kiln/network.h>

namespace kiln::fused {

inline constexpr const char* kDomain = "kiln";
inline constexpr const char* kFusedConv = "FusedConv";
inline constexpr const char* kFusedMatMul = "FusedMatMul";
inline constexpr const char* kPointwise = "Pointwise";
inline constexpr const char* kAttention = "Attention";

// Epilogue attributes of FusedConv / FusedMatMul.
inline constexpr const char* kBase = "base";  // ai.onnx op computed first: Conv, ConvTranspose, MatMul, Gemm
inline constexpr const char* kActivation = "activation";
inline constexpr const char* kActivationAlpha = "activation_alpha";
inline constexpr const char* kActivationBeta = "activation_beta";
inline constexpr const char* kResidualBeforeActivation = "residual_before_activation";

// The ai.onnx layer a FusedConv / FusedMatMul computes before its epilogue: the same name, the
// base op type, its opset (kept in the fused layer's opsetVersion) and its own attributes.
inline Layer baseLayer(const Layer& fused) {
  Layer base = fused;
  base.domain.clear();
  base.opType = fused.attrString(kBase);
  for (const char* key : {kBase, kActivation, kActivationAlpha, kActivationBeta, kResidualBeforeActivation})
    base.attributes.erase(key);
  return base;
}

}  // namespace kiln::fused
