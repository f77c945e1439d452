#pragma once
// Overloads of the C math functions for float and double that compile for host and device (CUDA's
// device versions in kernels, libm's in the host tests), so one KILN_HD functor serves both.
#include "kernels/cuda/common/host_device.h"

#include <math.h>

namespace kiln::kernels::cuda::math {

#define KILN_MATH_UNARY(name, floatFn, doubleFn)             \
  KILN_HD float name(float x) { return ::floatFn(x); }      \
  KILN_HD double name(double x) { return ::doubleFn(x); }
KILN_MATH_UNARY(sqrtOf, sqrtf, sqrt)
KILN_MATH_UNARY(expOf, expf, exp)
KILN_MATH_UNARY(expm1Of, expm1f, expm1)
KILN_MATH_UNARY(logOf, logf, log)
KILN_MATH_UNARY(log1pOf, log1pf, log1p)
KILN_MATH_UNARY(sinOf, sinf, sin)
KILN_MATH_UNARY(cosOf, cosf, cos)
KILN_MATH_UNARY(tanOf, tanf, tan)
KILN_MATH_UNARY(asinOf, asinf, asin)
KILN_MATH_UNARY(acosOf, acosf, acos)
KILN_MATH_UNARY(atanOf, atanf, atan)
KILN_MATH_UNARY(sinhOf, sinhf, sinh)
KILN_MATH_UNARY(coshOf, coshf, cosh)
KILN_MATH_UNARY(tanhOf, tanhf, tanh)
KILN_MATH_UNARY(asinhOf, asinhf, asinh)
KILN_MATH_UNARY(acoshOf, acoshf, acosh)
KILN_MATH_UNARY(atanhOf, atanhf, atanh)
KILN_MATH_UNARY(erfOf, erff, erf)
KILN_MATH_UNARY(floorOf, floorf, floor)
KILN_MATH_UNARY(ceilOf, ceilf, ceil)
KILN_MATH_UNARY(roundToEven, rintf, rint)  // the default rounding mode: half to even
KILN_MATH_UNARY(absOf, fabsf, fabs)
#undef KILN_MATH_UNARY

KILN_HD float fmodOf(float x, float y) { return ::fmodf(x, y); }
KILN_HD double fmodOf(double x, double y) { return ::fmod(x, y); }
KILN_HD float powOf(float x, float y) { return ::powf(x, y); }
KILN_HD double powOf(double x, double y) { return ::pow(x, y); }

KILN_HD bool isNaN(float x) { return x != x; }
KILN_HD bool isNaN(double x) { return x != x; }

}  // namespace kiln::kernels::cuda::math
