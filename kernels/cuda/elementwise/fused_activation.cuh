#pragma once
// A fused layer's activation applied to one fp32 value in device code, as the CPU's fused epilogue
// (kernels/cpu/fused/epilogue.h) applies it: the kernels that fuse an epilogue into their own
// store (depthwise convolution, the quantized layers' dequantization) share it.
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/elementwise/unary_ops.h>

namespace kiln::kernels::cuda {

// alpha, beta: Clip's min and max, HardSigmoid's alpha and beta, LeakyRelu's alpha.
__device__ __forceinline__ float fusedActivation(float v, Activation a, float alpha, float beta) {
  UnaryParams params;
  params.alpha = alpha;
  params.beta = beta;
  switch (a) {
    case Activation::kNone:
      return v;
    case Activation::kRelu:
      return UnaryFn<UnaryOp::kRelu>{params}(v);
    case Activation::kClip:
      return clipValue(v, true, alpha, true, beta);
    case Activation::kSigmoid:
      return UnaryFn<UnaryOp::kSigmoid>{params}(v);
    case Activation::kHardSigmoid:
      return UnaryFn<UnaryOp::kHardSigmoid>{params}(v);
    case Activation::kHardSwish:
      return UnaryFn<UnaryOp::kHardSwish>{params}(v);
    case Activation::kSiLU:
      return v * UnaryFn<UnaryOp::kSigmoid>{params}(v);
    case Activation::kGelu:
      return UnaryFn<UnaryOp::kGelu>{params}(v);
    case Activation::kGeluTanh:
      return UnaryFn<UnaryOp::kGeluTanh>{params}(v);
    case Activation::kLeakyRelu:
      return UnaryFn<UnaryOp::kLeakyRelu>{params}(v);
    case Activation::kTanh:
      return UnaryFn<UnaryOp::kTanh>{params}(v);
  }
  return v;
}

}  // namespace kiln::kernels::cuda
