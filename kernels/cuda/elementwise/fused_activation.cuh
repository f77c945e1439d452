#pragma once
// A fused layer's activation applied to one fp32 value in device code, as the CPU's fused epilogue
// (kernels/cpu/fused/epilogue.h) applies it: the kernels that fuse an epilogue into their own
// store (depthwise, small-channel and narrow pointwise convolutions, the quantized layers'
// dequantization) share it.
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/elementwise/unary_ops.h>

namespace kiln::kernels::cuda {

// The logistic function on the special function unit: ex2 and rcp approximations (a few ulp, far
// below fp16's and bf16's rounding) where expf and an IEEE division cost about 20 instructions a
// value. A fused epilogue's budget is about 17 a value for a memory-bound layer to run at the H200's
// bandwidth (EfficientNet's expansions and depthwise layers end in SiLU). -inf and large negative
// inputs give 0 (rcp of inf), NaN stays NaN.
__device__ __forceinline__ float fastSigmoid(float v) {
#if defined(KILN_CUDA_EMULATION)
  return 1.0f / (1.0f + std::exp(-v));
#else
  return __fdividef(1.0f, 1.0f + __expf(-v));
#endif
}

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
      return fastSigmoid(v);
    case Activation::kHardSigmoid:
      return UnaryFn<UnaryOp::kHardSigmoid>{params}(v);
    case Activation::kHardSwish:
      return UnaryFn<UnaryOp::kHardSwish>{params}(v);
    case Activation::kSiLU:
      return v * fastSigmoid(v);
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

// A kernel's activation as a template argument: an Activation's value (the switch folds away), or
// kRuntimeActivation to take `runtime`.
inline constexpr int kRuntimeActivation = -1;

template <int kActivation>
__device__ __forceinline__ float fusedActivationOf(float v, Activation runtime, float alpha, float beta) {
  if constexpr (kActivation == kRuntimeActivation)
    return fusedActivation(v, runtime, alpha, beta);
  else
    return fusedActivation(v, Activation(kActivation), alpha, beta);
}

}  // namespace kiln::kernels::cuda
