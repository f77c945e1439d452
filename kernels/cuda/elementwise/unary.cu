// One-input elementwise kernels: a dense map with one instantiation per (op, type) the op takes.
#include "elementwise_kernels.cuh"
#include "unary.h"
#include "unary_ops.h"

#include <limits>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

template <class T>
struct ClipFn {
  const T* lo;
  const T* hi;
  __device__ ComputeType<T> operator()(ComputeType<T> x) const {
    using C = ComputeType<T>;
    return clipValue(x, lo != nullptr, lo ? toCompute(*lo) : C(0), hi != nullptr, hi ? toCompute(*hi) : C(0));
  }
};

struct NotFn {
  __device__ uint8_t operator()(uint8_t x) const { return x == 0; }
};

struct IsNaNFn {
  template <class C>
  __device__ bool operator()(C x) const { return x != x; }
};

struct IsInfFn {
  bool positive, negative;
  template <class C>
  __device__ bool operator()(C x) const {
    return x == C(INFINITY) ? positive : x == C(-INFINITY) ? negative : false;
  }
};

}  // namespace

cudaError_t launchUnary(kernels::UnaryOp op, const void* in, void* out, int64_t n, ElementType type,
                        const kernels::UnaryParams& params, cudaStream_t stream) {
  const bool integer = !isFloatType(type);
  if (integer ? !unaryTakesIntegers(op) : !unaryTakesFloats(op)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  cudaError_t status = cudaErrorInvalidValue;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    withUnaryOp(op, [&](auto opTag) {
      constexpr UnaryOp kOp = decltype(opTag)::value;
      constexpr bool kSupported = std::is_integral_v<T> ? unaryTakesIntegers(kOp) : unaryTakesFloats(kOp);
      if constexpr (kSupported)
        status = mapDense(static_cast<const T*>(in), static_cast<T*>(out), n, UnaryFn<kOp>{params}, stream);
    });
    return status;
  };
  return integer ? dispatchInteger(type, run) : dispatchFloat(type, run);
}

cudaError_t launchClip(const void* in, void* out, int64_t n, ElementType type, const void* lo, const void* hi,
                       cudaStream_t stream) {
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    return mapDense(static_cast<const T*>(in), static_cast<T*>(out), n,
                    ClipFn<T>{static_cast<const T*>(lo), static_cast<const T*>(hi)}, stream);
  });
}

cudaError_t launchNot(const void* in, void* out, int64_t n, cudaStream_t stream) {
  return mapDense(static_cast<const uint8_t*>(in), static_cast<uint8_t*>(out), n, NotFn{}, stream);
}

cudaError_t launchIsNaN(const void* in, void* out, int64_t n, ElementType type, cudaStream_t stream) {
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return mapDense(static_cast<const T*>(in), static_cast<uint8_t*>(out), n, IsNaNFn{}, stream);
  });
}

cudaError_t launchIsInf(const void* in, void* out, int64_t n, ElementType type, bool detectPositive,
                        bool detectNegative, cudaStream_t stream) {
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return mapDense(static_cast<const T*>(in), static_cast<uint8_t*>(out), n, IsInfFn{detectPositive, detectNegative},
                    stream);
  });
}

}  // namespace kiln::kernels::cuda
