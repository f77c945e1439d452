#pragma once
// The epilogue of a fused Conv / MatMul, applied in place over its output in one pass:
//   y = act(y + bias + residual)   or   y = act(y + bias) + residual
#include <cstdint>

namespace kiln::kernels {

enum class Activation { kNone, kRelu, kClip, kSigmoid, kHardSigmoid, kHardSwish, kSiLU, kGelu, kGeluTanh, kLeakyRelu, kTanh };

struct Epilogue {
  Activation activation = Activation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu: alpha
  // bias[(i / biasInner) % biasLength] is added to element i (per channel or per column).
  const float* bias = nullptr;
  int64_t biasLength = 1, biasInner = 1;
  const float* residual = nullptr;  // same element count as the output
  bool residualBeforeActivation = true;
};

void applyEpilogue(float* data, int64_t count, const Epilogue& epilogue);

}  // namespace kiln::kernels
