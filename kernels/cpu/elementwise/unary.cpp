#include "unary.h"

#include "fast_math.h"
#include "element_types.h"
#include "kernels/cpu/common/parallel.h"

#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace kiln::kernels {
namespace {

using namespace lanes;

// Elements one thread takes at least: memory-bound ops need big chunks to pay for the hand-off,
// transcendental ones are worth splitting sooner.
int64_t grainFor(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg: case UnaryOp::kAbs: case UnaryOp::kSign: case UnaryOp::kRelu:
    case UnaryOp::kShrink: case UnaryOp::kBitwiseNot: case UnaryOp::kReciprocal:
    case UnaryOp::kFloor: case UnaryOp::kCeil: case UnaryOp::kRound: case UnaryOp::kLeakyRelu:
    case UnaryOp::kHardSigmoid: case UnaryOp::kHardSwish: case UnaryOp::kThresholdedRelu:
    case UnaryOp::kSoftsign: case UnaryOp::kSqrt:
      return 1 << 14;
    default:
      return 1 << 11;
  }
}

// Applies a lane-generic fn: float runs 8 lanes at a time, double one element at a time.
template <class T, class Fn>
void mapLanes(const T* in, T* out, int64_t n, Fn&& fn) {
  if constexpr (std::is_same_v<T, float>) {
    mapFloat(in, out, n, fn);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = fn(in[i]);
  }
}

// float uses the vectorised approximation, double the precise libm function.
template <class T, class LaneFn, class PreciseFn>
void mapFastOrPrecise(const T* in, T* out, int64_t n, LaneFn&& approx, PreciseFn&& precise) {
  if constexpr (std::is_same_v<T, float>) {
    mapFloat(in, out, n, approx);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = precise(in[i]);
  }
}

template <class T, class Fn>
void mapScalar(const T* in, T* out, int64_t n, Fn&& fn) {
  for (int64_t i = 0; i < n; ++i) out[i] = fn(in[i]);
}

// T is float or double.
template <class T>
void floatChunk(UnaryOp op, const T* in, T* out, int64_t n, const UnaryParams& params) {
  const T alpha = T(params.alpha), beta = T(params.beta), gamma = T(params.gamma);
  switch (op) {
    case UnaryOp::kNeg: return mapScalar(in, out, n, [](T x) { return -x; });
    case UnaryOp::kAbs: return mapLanes(in, out, n, [](auto x) { return absOf(x); });
    case UnaryOp::kSign:
      return mapScalar(in, out, n, [](T x) { return x > 0 ? T(1) : x < 0 ? T(-1) : x; });  // keeps 0 and NaN
    case UnaryOp::kRelu: return mapLanes(in, out, n, [](auto x) { return maxOf(decltype(x)(0), x); });
    case UnaryOp::kShrink:
      return mapScalar(in, out, n, [=](T x) { return x < -alpha ? x + beta : x > alpha ? x - beta : T(0); });
    case UnaryOp::kSqrt: return mapLanes(in, out, n, [](auto x) { return sqrtOf(x); });
    case UnaryOp::kReciprocal: return mapScalar(in, out, n, [](T x) { return T(1) / x; });
    case UnaryOp::kExp:
      return mapFastOrPrecise(in, out, n, [](auto x) { return expApprox(x); }, [](T x) { return std::exp(x); });
    case UnaryOp::kLog: return mapScalar(in, out, n, [](T x) { return std::log(x); });
    case UnaryOp::kSin: return mapScalar(in, out, n, [](T x) { return std::sin(x); });
    case UnaryOp::kCos: return mapScalar(in, out, n, [](T x) { return std::cos(x); });
    case UnaryOp::kTan: return mapScalar(in, out, n, [](T x) { return std::tan(x); });
    case UnaryOp::kAsin: return mapScalar(in, out, n, [](T x) { return std::asin(x); });
    case UnaryOp::kAcos: return mapScalar(in, out, n, [](T x) { return std::acos(x); });
    case UnaryOp::kAtan: return mapScalar(in, out, n, [](T x) { return std::atan(x); });
    case UnaryOp::kSinh: return mapScalar(in, out, n, [](T x) { return std::sinh(x); });
    case UnaryOp::kCosh: return mapScalar(in, out, n, [](T x) { return std::cosh(x); });
    case UnaryOp::kTanh:
      return mapFastOrPrecise(in, out, n, [](auto x) { return tanhApprox(x); }, [](T x) { return std::tanh(x); });
    case UnaryOp::kAsinh: return mapScalar(in, out, n, [](T x) { return std::asinh(x); });
    case UnaryOp::kAcosh: return mapScalar(in, out, n, [](T x) { return std::acosh(x); });
    case UnaryOp::kAtanh: return mapScalar(in, out, n, [](T x) { return std::atanh(x); });
    case UnaryOp::kErf:
      return mapFastOrPrecise(in, out, n, [](auto x) { return erfApprox(x); }, [](T x) { return std::erf(x); });
    case UnaryOp::kFloor: return mapLanes(in, out, n, [](auto x) { return floorOf(x); });
    case UnaryOp::kCeil: return mapLanes(in, out, n, [](auto x) { return ceilOf(x); });
    case UnaryOp::kRound: return mapLanes(in, out, n, [](auto x) { return roundToEven(x); });
    case UnaryOp::kLeakyRelu:
      return mapLanes(in, out, n, [=](auto x) {
        using V = decltype(x);
        return select(less(x, V(0)), V(alpha) * x, x);
      });
    case UnaryOp::kElu: return mapScalar(in, out, n, [=](T x) { return x < 0 ? alpha * std::expm1(x) : x; });
    case UnaryOp::kSelu:
      return mapScalar(in, out, n, [=](T x) { return gamma * (x > 0 ? x : alpha * std::expm1(x)); });
    case UnaryOp::kCelu:
      return mapScalar(in, out, n, [=](T x) { return x > 0 ? x : alpha * std::expm1(x / alpha); });
    case UnaryOp::kHardSigmoid:
      return mapLanes(in, out, n, [=](auto x) {
        using V = decltype(x);
        return maxOf(V(0), minOf(V(1), mulAdd(V(alpha), x, V(beta))));
      });
    case UnaryOp::kHardSwish:
      return mapLanes(in, out, n, [](auto x) {
        using V = decltype(x);
        return x * maxOf(V(0), minOf(V(1), mulAdd(V(T(1) / T(6)), x, V(0.5f))));
      });
    case UnaryOp::kThresholdedRelu:
      return mapLanes(in, out, n, [=](auto x) {
        using V = decltype(x);
        return select(greater(x, V(alpha)), x, V(0));
      });
    case UnaryOp::kSigmoid:
      return mapFastOrPrecise(in, out, n, [](auto x) { return sigmoidApprox(x); },
                              [](T x) { return T(1) / (T(1) + std::exp(-x)); });
    case UnaryOp::kSoftplus:  // log(1 + e^x) without overflow for large x
      return mapScalar(in, out, n, [](T x) { return (x > 0 ? x : T(0)) + std::log1p(std::exp(-std::fabs(x))); });
    case UnaryOp::kSoftsign: return mapScalar(in, out, n, [](T x) { return x / (T(1) + std::fabs(x)); });
    case UnaryOp::kGelu:
      return mapFastOrPrecise(in, out, n, [](auto x) { return geluErfApprox(x); },
                              [](T x) { return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752))); });
    case UnaryOp::kGeluTanh:
      return mapFastOrPrecise(in, out, n, [](auto x) { return geluTanhApprox(x); }, [](T x) {
        return T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286536) * (x + T(0.044715) * x * x * x)));
      });
    case UnaryOp::kBitwiseNot: break;
  }
  throw std::invalid_argument("this unary op is not defined for floating-point tensors");
}

template <class T>
void integerChunk(UnaryOp op, const T* in, T* out, int64_t n, const UnaryParams& params) {
  using Unsigned = std::make_unsigned_t<T>;
  switch (op) {
    case UnaryOp::kNeg:  // two's-complement wrap-around, like numpy (no overflow UB on the minimum)
      return mapScalar(in, out, n, [](T x) { return T(Unsigned(0) - Unsigned(x)); });
    case UnaryOp::kAbs:
      return mapScalar(in, out, n, [](T x) { return x < 0 ? T(Unsigned(0) - Unsigned(x)) : x; });
    case UnaryOp::kSign: return mapScalar(in, out, n, [](T x) { return T((x > 0) - (x < 0)); });
    case UnaryOp::kRelu: return mapScalar(in, out, n, [](T x) { return x < 0 ? T(0) : x; });
    case UnaryOp::kBitwiseNot: return mapScalar(in, out, n, [](T x) { return T(~x); });
    case UnaryOp::kShrink: {
      const double lambd = params.alpha, bias = params.beta;
      return mapScalar(in, out, n, [=](T x) {
        double v = double(x);
        return v < -lambd ? T(v + bias) : v > lambd ? T(v - bias) : T(0);
      });
    }
    default: break;
  }
  throw std::invalid_argument("this unary op is only defined for floating-point tensors");
}

}  // namespace

bool isFloatOnly(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg: case UnaryOp::kAbs: case UnaryOp::kSign: case UnaryOp::kRelu:
    case UnaryOp::kShrink: case UnaryOp::kBitwiseNot:
      return false;
    default:
      return true;
  }
}

template <class T>
void unary(UnaryOp op, const T* in, T* out, int64_t n, const UnaryParams& params) {
  if constexpr (std::is_integral_v<T>) {
    if (isFloatOnly(op)) throw std::invalid_argument("this unary op is only defined for floating-point tensors");
  } else if (op == UnaryOp::kBitwiseNot) {
    throw std::invalid_argument("bitwise ops are only defined for integer tensors");
  }
  parallelFor(n, grainFor(op), [&](int64_t begin, int64_t end) {
    if constexpr (std::is_integral_v<T>) {
      integerChunk(op, in + begin, out + begin, end - begin, params);
    } else if constexpr (kIsHalfFloat<T>) {
      float tile[kHalfTile];
      for (int64_t i = begin; i < end; i += kHalfTile) {
        int64_t count = std::min(kHalfTile, end - i);
        widen(in + i, tile, count);
        floatChunk<float>(op, tile, tile, count, params);
        narrow(tile, out + i, count);
      }
    } else {
      floatChunk<T>(op, in + begin, out + begin, end - begin, params);
    }
  });
}

template <class T>
void clip(const T* in, T* out, int64_t n, T lo, T hi) {
  parallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
    if constexpr (kIsHalfFloat<T>) {
      const float low = float(lo), high = float(hi);
      float tile[kHalfTile];
      for (int64_t i = begin; i < end; i += kHalfTile) {
        int64_t count = std::min(kHalfTile, end - i);
        widen(in + i, tile, count);
        mapFloat(tile, tile, count, [=](auto x) {
          using V = decltype(x);
          return minOf(V(high), maxOf(V(low), x));
        });
        narrow(tile, out + i, count);
      }
    } else {
      for (int64_t i = begin; i < end; ++i) {
        T x = in[i] < lo ? lo : in[i];  // NaN compares false and passes through
        out[i] = x > hi ? hi : x;
      }
    }
  });
}

void logicalNot(const bool* in, bool* out, int64_t n) {
  parallelFor(n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = !in[i];
  });
}

template <class T>
void isNaN(const T* in, bool* out, int64_t n) {
  parallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = std::isnan(float(ComputeType<T>(in[i])));
  });
}

template <class T>
void isInf(const T* in, bool* out, int64_t n, bool detectPositive, bool detectNegative) {
  parallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      ComputeType<T> v = ComputeType<T>(in[i]);
      out[i] = std::isinf(v) && (v > 0 ? detectPositive : detectNegative);
    }
  });
}

#define KILN_INSTANTIATE_UNARY(T)                                             \
  template void unary<T>(UnaryOp, const T*, T*, int64_t, const UnaryParams&); \
  template void clip<T>(const T*, T*, int64_t, T, T);
KILN_ELEMENTWISE_NUMERIC_TYPES(KILN_INSTANTIATE_UNARY)
#undef KILN_INSTANTIATE_UNARY

#define KILN_INSTANTIATE_FLOAT_CLASSIFY(T)          \
  template void isNaN<T>(const T*, bool*, int64_t); \
  template void isInf<T>(const T*, bool*, int64_t, bool, bool);
KILN_ELEMENTWISE_FLOAT_TYPES(KILN_INSTANTIATE_FLOAT_CLASSIFY)
#undef KILN_INSTANTIATE_FLOAT_CLASSIFY

}  // namespace kiln::kernels
