// Pow with its own type rules: the base type (float, double, Float16, BFloat16, int32, int64) is
// the output type, and the exponent may be any numeric type.
#include "binary.h"
#include "broadcast_loops.h"

#include <cmath>
#include <type_traits>

namespace kiln::kernels {
namespace {

constexpr int64_t kPowerGrain = 1 << 11;

// Exact integer power by squaring, wrapping on overflow like numpy.
template <class T, class E>
T integerPower(T base, E exponent) {
  if constexpr (std::is_signed_v<E>) {
    if (exponent < 0) return base == 1 ? T(1) : base == -1 ? T((exponent & 1) ? -1 : 1) : T(0);
  }
  using U = std::make_unsigned_t<T>;
  U result = 1, factor = U(base);
  for (auto e = std::make_unsigned_t<E>(exponent); e != 0; e >>= 1) {
    if (e & 1) result = U(result * factor);
    factor = U(factor * factor);
  }
  return T(result);
}

template <class Base, class Exponent>
ComputeType<Base> raise(ComputeType<Base> base, ComputeType<Exponent> exponent) {
  using C = ComputeType<Base>;
  if constexpr (std::is_integral_v<Base> && std::is_integral_v<Exponent>) {
    return integerPower(base, exponent);
  } else if constexpr (std::is_same_v<C, float> && std::is_same_v<ComputeType<Exponent>, float>) {
    return std::pow(base, exponent);
  } else {
    return C(std::pow(double(base), double(exponent)));
  }
}

// A single floating-point exponent over a contiguous base: the common x^2, x^0.5, ... cases get a
// plain vectorisable loop instead of pow().
template <class Base>
bool tryUniformExponent(const Base* base, double exponent, Base* out, int64_t n) {
  using C = ComputeType<Base>;
  auto map = [&](auto fn) {
    parallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
      C tileIn[kHalfTile], tileOut[kHalfTile];
      for (int64_t start = begin; start < end; start += kHalfTile) {
        const int64_t count = std::min(kHalfTile, end - start);
        const C* in = computeView(base + start, count, tileIn);
        C* result = kIsHalfFloat<Base> ? tileOut : reinterpret_cast<C*>(out + start);
        for (int64_t i = 0; i < count; ++i) result[i] = fn(in[i]);
        if constexpr (kIsHalfFloat<Base>) narrow(tileOut, out + start, count);
      }
    });
  };
  if (exponent == 2.0) map([](C x) { return x * x; });
  else if (exponent == 3.0) map([](C x) { return x * x * x; });
  else if (exponent == 1.0) map([](C x) { return x; });
  else if (exponent == 0.5) map([](C x) { return std::sqrt(x); });
  else if (exponent == -1.0) map([](C x) { return C(1) / x; });
  else if (exponent == -0.5) map([](C x) { return C(1) / std::sqrt(x); });
  else return false;
  return true;
}

}  // namespace

template <class Base, class Exponent>
void power(const Base* base, const Exponent* exponent, Base* out, const BroadcastPlan& plan) {
  if constexpr (!std::is_integral_v<Base>) {
    if (plan.isUniform(1) && plan.matchesOutput(0) &&
        tryUniformExponent(base, double(ComputeType<Exponent>(exponent[0])), out, plan.outputCount()))
      return;
  }
  broadcastBinary(base, exponent, out, plan, kPowerGrain, [](ComputeType<Base> x, ComputeType<Exponent> y) {
    return raise<Base, Exponent>(x, y);
  });
}

// Every exponent type for each base type ONNX allows.
#define KILN_INSTANTIATE_POWER(Exponent) \
  template void power<KILN_POWER_BASE, Exponent>(const KILN_POWER_BASE*, const Exponent*, KILN_POWER_BASE*, \
                                                  const BroadcastPlan&);
#define KILN_POWER_BASE float
KILN_ELEMENTWISE_NUMERIC_TYPES(KILN_INSTANTIATE_POWER)
#undef KILN_POWER_BASE
#define KILN_POWER_BASE double
KILN_ELEMENTWISE_NUMERIC_TYPES(KILN_INSTANTIATE_POWER)
#undef KILN_POWER_BASE
#define KILN_POWER_BASE Float16
KILN_ELEMENTWISE_NUMERIC_TYPES(KILN_INSTANTIATE_POWER)
#undef KILN_POWER_BASE
#define KILN_POWER_BASE BFloat16
KILN_ELEMENTWISE_NUMERIC_TYPES(KILN_INSTANTIATE_POWER)
#undef KILN_POWER_BASE
#define KILN_POWER_BASE int32_t
KILN_ELEMENTWISE_NUMERIC_TYPES(KILN_INSTANTIATE_POWER)
#undef KILN_POWER_BASE
#define KILN_POWER_BASE int64_t
KILN_ELEMENTWISE_NUMERIC_TYPES(KILN_INSTANTIATE_POWER)
#undef KILN_POWER_BASE
#undef KILN_INSTANTIATE_POWER

}  // namespace kiln::kernels
