#pragma once
// Two- and three-input elementwise kernels with numpy broadcasting (see broadcast.h). Each call
// picks the op and the run pattern (which inputs repeat) once, then runs a typed inner loop over
// runs of the output, split across threads.
#include "broadcast.h"
#include "kernels/cpu/common/numeric_types.h"

#include <cstdint>
#include <string>

namespace kiln::kernels {

enum class BinaryOp : uint8_t {
  // arithmetic, out has the inputs' type
  kAdd, kSub, kMul, kDiv, kMin, kMax,
  kMod,          // integers: remainder with the divisor's sign (Python %); floats: not allowed
  kFMod,         // C fmod: remainder with the dividend's sign
  kPRelu,        // a < 0 ? a * b : a
  kBitwiseAnd, kBitwiseOr, kBitwiseXor, kBitShiftLeft, kBitShiftRight,  // integers only
  // comparisons, out is bool
  kEqual, kLess, kLessOrEqual, kGreater, kGreaterOrEqual,
  // logic on bool
  kAnd, kOr, kXor,
};

bool isComparison(BinaryOp op);

// Arithmetic ops. T: float, double, Float16, BFloat16 or any integer type. Integer division by
// zero gives 0 instead of trapping. Throws std::invalid_argument for an op T does not support.
template <class T>
void binary(BinaryOp op, const T* a, const T* b, T* out, const BroadcastPlan& plan);

// Comparisons; T as for binary() (bool equality is logical()'s kEqual).
template <class T>
void compare(BinaryOp op, const T* a, const T* b, bool* out, const BroadcastPlan& plan);

// kAnd, kOr, kXor, kEqual on bool tensors.
void logical(BinaryOp op, const bool* a, const bool* b, bool* out, const BroadcastPlan& plan);

// out = base ^ exponent with out of the base's type. Integer bases with integer exponents are
// computed exactly (negative exponents give 0 unless the base is +-1); other mixes via double.
template <class Base, class Exponent>
void power(const Base* base, const Exponent* exponent, Base* out, const BroadcastPlan& plan);

// out = condition ? x : y (plan with 3 inputs: condition, x, y). T is an element of the right size
// for any fixed-size type (uint8_t, uint16_t, uint32_t, uint64_t), or std::string.
template <class T>
void select(const bool* condition, const T* x, const T* y, T* out, const BroadcastPlan& plan);

}  // namespace kiln::kernels
