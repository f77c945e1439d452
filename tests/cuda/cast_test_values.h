#pragma once
// Values that exercise Cast's rules (every bit pattern of the 1- and 2-byte types; edges and
// random bits of the wider ones), and the CUDA storage type of each CPU element type.
#include "cuda/cuda_test_util.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

namespace kiln::test {

// The CUDA storage type of a CPU element type (same size and bits).
template <class T>
struct CudaStorage { using type = T; };
template <> struct CudaStorage<Float16> { using type = __half; };
template <> struct CudaStorage<BFloat16> { using type = __nv_bfloat16; };
template <> struct CudaStorage<Float8E4M3> { using type = __nv_fp8_e4m3; };
template <> struct CudaStorage<Float8E5M2> { using type = __nv_fp8_e5m2; };

template <class To, class From>
To bitCast(const From& v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(static_cast<void*>(&out), static_cast<const void*>(&v), sizeof out);  // storage types alike
  return out;
}

// Byte-equal, or both NaN for float types.
template <class T>
bool sameElement(const T& a, const T& b) {
  if constexpr (kIsFloatLike<T>) {
    if (std::isnan(toDouble(a)) && std::isnan(toDouble(b))) return true;
  }
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
using HostVectorElement = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;  // no std::vector<bool>

// Source values that exercise the conversion rules: every bit pattern of 1- and 2-byte types,
// edge values and random bits for the wider ones.
template <class T>
std::vector<HostVectorElement<T>> castSources() {
  std::vector<HostVectorElement<T>> values;
  if constexpr (std::is_same_v<T, bool>) {
    values = {0, 1};
  } else if constexpr (sizeof(T) <= 2) {
    using Bits = std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t>;
    for (uint32_t b = 0; b <= std::numeric_limits<Bits>::max(); ++b) values.push_back(bitCast<T>(Bits(b)));
  } else {
    if constexpr (std::is_floating_point_v<T>) {
      for (double v : {0.0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 127.5, 128.0, -129.0, 255.5, 256.0, 32767.6, 65504.0,
                       65520.0, 70000.0, 448.0, 500.0, 57344.0, 2147483647.0, 2147483648.0, -2147483649.0, 4294967296.0,
                       9.3e18, 1.9e19, -9.3e18, 1e30, 1e-30, 1e-40, 3.0e38, 1e300, -1e300})
        values.push_back(T(v));
      values.push_back(std::numeric_limits<T>::infinity());
      values.push_back(-std::numeric_limits<T>::infinity());
      values.push_back(std::numeric_limits<T>::quiet_NaN());
      values.push_back(std::numeric_limits<T>::denorm_min());
    } else {
      values = {T(0), T(1), T(-1), std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(127), T(128),
                T(255), T(256), T(65535), T(65536), T(16777217), T(-16777217)};
    }
    std::mt19937_64 rng(5);
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    for (int i = 0; i < 4000; ++i) {
      const T v = bitCast<T>(Bits(rng()));
      values.push_back(v);
      if constexpr (std::is_integral_v<T>) values.push_back(T(v >> (i % (8 * sizeof(T)))));  // small magnitudes too
    }
  }
  return values;
}

}  // namespace kiln::test
