#pragma once
// Branch-free float approximations of the activation functions that dominate pointwise time
// (exp, sigmoid, tanh, erf, gelu), written once over the lane types of float_lanes.h. Accuracy is
// a few float ulps (relative error below 1e-6 over the whole range); NaN stays NaN.
#include "float_lanes.h"

namespace kiln::kernels::lanes {

// Cephes expf: e^x = 2^n * e^r with |r| <= ln2/2 and a degree-6 polynomial for e^r.
template <class V>
V expApprox(V x) {
  constexpr float kOverflow = 88.7228391f;   // ln(FLT_MAX)
  constexpr float kUnderflow = -86.6f;       // results below ~2e-38 flush to 0
  V t = minOf(V(kOverflow), maxOf(V(kUnderflow), x));
  V n = roundToEven(t * V(1.44269504088896341f));
  V r = mulAdd(n, V(-0.693359375f), t);  // ln2 split in two for an exact reduction
  r = mulAdd(n, V(2.12194440e-4f), r);
  V p = V(1.9875691500e-4f);
  p = mulAdd(p, r, V(1.3981999507e-3f));
  p = mulAdd(p, r, V(8.3334519073e-3f));
  p = mulAdd(p, r, V(4.1665795894e-2f));
  p = mulAdd(p, r, V(1.6666665459e-1f));
  p = mulAdd(p, r, V(5.0000001201e-1f));
  p = mulAdd(p, r * r, r + V(1.0f));
  V result = p * powerOfTwo(n - V(1.0f)) * V(2.0f);  // n can reach 128
  result = select(greater(x, V(kOverflow)), V(INFINITY), result);
  return select(less(x, V(kUnderflow)), V(0.0f), result);
}

template <class V>
V sigmoidApprox(V x) {
  return V(1.0f) / (V(1.0f) + expApprox(-x));
}

// Minimax rational approximation x*P(x^2)/Q(x^2) on [-7.9, 7.9] (the one Eigen uses); tanh is
// +-1 in float beyond that.
template <class V>
V tanhApprox(V x) {
  constexpr float kSaturation = 7.90531110763549805f;
  V t = minOf(V(kSaturation), maxOf(V(-kSaturation), x));
  V t2 = t * t;
  V p = V(-2.76076847742355e-16f);
  p = mulAdd(p, t2, V(2.00018790482477e-13f));
  p = mulAdd(p, t2, V(-8.60467152213735e-11f));
  p = mulAdd(p, t2, V(5.12229709037114e-08f));
  p = mulAdd(p, t2, V(1.48572235717979e-05f));
  p = mulAdd(p, t2, V(6.37261928875436e-04f));
  p = mulAdd(p, t2, V(4.89352455891786e-03f));
  V q = V(1.19825839466702e-06f);
  q = mulAdd(q, t2, V(1.18534705686654e-04f));
  q = mulAdd(q, t2, V(2.26843463243900e-03f));
  q = mulAdd(q, t2, V(4.89352518554385e-03f));
  V result = t * p / q;
  return select(less(absOf(x), V(0.0004f)), x, result);  // tanh(x) == x in float there
}

// Minimax rational approximation x*P(x^2)/Q(x^2) on [-4, 4]; erf is +-1 in float beyond that.
template <class V>
V erfApprox(V x) {
  V t = minOf(V(4.0f), maxOf(V(-4.0f), x));
  V t2 = t * t;
  V p = V(-2.72614225801306e-10f);
  p = mulAdd(p, t2, V(2.77068142495902e-08f));
  p = mulAdd(p, t2, V(-2.10102402082508e-06f));
  p = mulAdd(p, t2, V(-5.69250639462346e-05f));
  p = mulAdd(p, t2, V(-7.34990630326855e-04f));
  p = mulAdd(p, t2, V(-2.95459980854025e-03f));
  p = mulAdd(p, t2, V(-1.60960333262415e-02f));
  V q = V(-1.45660718464996e-05f);
  q = mulAdd(q, t2, V(-2.13374055278905e-04f));
  q = mulAdd(q, t2, V(-1.68282697438203e-03f));
  q = mulAdd(q, t2, V(-7.37332916720468e-03f));
  q = mulAdd(q, t2, V(-1.42647390514189e-02f));
  return t * p / q;
}

// Gelu(x) = x * Phi(x), exactly (erf) or with the tanh approximation of Phi.
template <class V>
V geluErfApprox(V x) {
  V half = V(0.5f) * x;
  return mulAdd(half, erfApprox(x * V(0.70710678118654752f)), half);
}

template <class V>
V geluTanhApprox(V x) {
  V inner = V(0.79788456080286536f) * mulAdd(V(0.044715f) * x, x * x, x);
  V half = V(0.5f) * x;
  return mulAdd(half, tanhApprox(inner), half);
}

}  // namespace kiln::kernels::lanes
