#pragma once
// Element type conversion for Cast and CastLike.
// - to bool: nonzero (NaN included) is true; from bool: 0 or 1.
// - floats to integers truncate toward zero and saturate at the integer's range; NaN gives 0
//   (ONNX leaves out-of-range values undefined; this keeps them defined).
// - to Float16/BFloat16/fp8: round to nearest even (fp8 saturates, as ONNX's default).
// - to string: integers in decimal, floats in their shortest round-trip form, "NaN", "INF", "-INF",
//   bools as "True"/"False" (numpy's spelling, which ONNX's reference follows).
// - from string: the reverse, case-insensitive, with an optional leading '+'.
#include "kernels/cpu/common/numeric_types.h"

#include <cstdint>
#include <string>

namespace kiln::kernels {

// Src, Dst: any numeric type, bool, Float8E4M3, Float8E5M2.
template <class Src, class Dst>
void cast(const Src* in, Dst* out, int64_t n);

template <class T>
void castToString(const T* in, std::string* out, int64_t n);

// Throws std::invalid_argument naming the first string that is not a number of type T.
template <class T>
void castFromString(const std::string* in, T* out, int64_t n);

}  // namespace kiln::kernels
