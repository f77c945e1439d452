#pragma once
// One-input elementwise kernels: math functions, activations, rounding, Clip, Not, IsNaN/IsInf.
// Each call dispatches on the op once, then runs a typed loop over [0, n) split across threads.
#include "kernels/cpu/common/numeric_types.h"

#include <cstdint>

namespace kiln::kernels {

enum class UnaryOp : uint8_t {
  // any numeric type
  kNeg, kAbs, kSign, kRelu, kShrink,
  // integers only
  kBitwiseNot,
  // floats only
  kSqrt, kReciprocal, kExp, kLog, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kTanh,
  kAsinh, kAcosh, kAtanh, kErf, kFloor, kCeil, kRound,
  kLeakyRelu, kElu, kSelu, kCelu, kHardSigmoid, kHardSwish, kThresholdedRelu, kSigmoid, kSoftplus,
  kSoftsign, kGelu, kGeluTanh,
};

// Attributes of the parameterised activations (ONNX names; unused ones are ignored):
// LeakyRelu/Elu/Celu/ThresholdedRelu alpha; Selu alpha, gamma; HardSigmoid alpha, beta;
// Shrink lambd (alpha), bias (beta).
struct UnaryParams {
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
};

bool isFloatOnly(UnaryOp op);

// T: float, double, Float16, BFloat16 (every op), or an integer type (not the float-only ops).
// Throws std::invalid_argument for an op the type does not support.
template <class T>
void unary(UnaryOp op, const T* in, T* out, int64_t n, const UnaryParams& params = {});

// out = min(max(in, lo), hi); hi wins when lo > hi. NaN stays NaN.
template <class T>
void clip(const T* in, T* out, int64_t n, T lo, T hi);

void logicalNot(const bool* in, bool* out, int64_t n);

// T: float, double, Float16, BFloat16.
template <class T>
void isNaN(const T* in, bool* out, int64_t n);
template <class T>
void isInf(const T* in, bool* out, int64_t n, bool detectPositive, bool detectNegative);

}  // namespace kiln::kernels
