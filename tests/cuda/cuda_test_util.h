#pragma once
// Helpers of the CUDA kernel tests: host tensors in the CPU kernels' element types (Float16,
// BFloat16, ... as kernels/cpu uses them; bool tensors as uint8_t), seeded random data, device
// buffers, launches on poisoned outputs, and per-precision comparison.
#include "cuda/device_buffer.h"
#include "cuda/gpu_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln::test {

using kernels::BFloat16;
using kernels::Float16;
using kernels::Float8E4M3;
using kernels::Float8E5M2;
using kernels::cuda::ElementType;

template <class T>
inline constexpr bool kIsCpuNarrowFloat = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16> ||
                                          std::is_same_v<T, Float8E4M3> || std::is_same_v<T, Float8E5M2>;
template <class T>
inline constexpr bool kIsFloatLike = kIsCpuNarrowFloat<T> || std::is_floating_point_v<T>;

template <class T>
constexpr ElementType elementTypeOf() {
  if constexpr (std::is_same_v<T, float>) return ElementType::kFloat32;
  else if constexpr (std::is_same_v<T, Float16>) return ElementType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return ElementType::kBFloat16;
  else if constexpr (std::is_same_v<T, double>) return ElementType::kFloat64;
  else if constexpr (std::is_same_v<T, int8_t>) return ElementType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return ElementType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return ElementType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return ElementType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return ElementType::kUInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) return ElementType::kUInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return ElementType::kUInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) return ElementType::kUInt64;
  else if constexpr (std::is_same_v<T, bool>) return ElementType::kBool;
  else if constexpr (std::is_same_v<T, Float8E4M3>) return ElementType::kFloat8E4M3;
  else return ElementType::kFloat8E5M2;
}

// The value of 16-bit float bits as a kernel wrote them: fp16, or bf16 where `type` says so.
inline float halfBitsValue(ElementType type, uint16_t bits) {
  if (type == ElementType::kFloat16) {
    Float16 h;
    h.bits = bits;
    return float(h);
  }
  BFloat16 b;
  b.bits = bits;
  return float(b);
}

template <class T>
double toDouble(T v) {
  if constexpr (kIsCpuNarrowFloat<T>) return double(float(v));
  else return double(v);
}

template <class T>
T fromDouble(double v) {
  if constexpr (kIsCpuNarrowFloat<T>) return T(float(v));
  else return T(v);
}

// Uniform values in [lo, hi], rounded to T; with avoidZero, never 0 (nor below 1e-3 in magnitude
// for floats), since all-zero or zero-laden data hides missing writes and broken scales.
template <class T>
std::vector<T> randomValues(int64_t n, double lo, double hi, uint32_t seed, bool avoidZero = true) {
  std::mt19937 rng(seed);
  std::vector<T> values(static_cast<size_t>(n));
  if constexpr (kIsFloatLike<T>) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (T& v : values) {
      double x = dist(rng);
      while (avoidZero && std::fabs(toDouble(fromDouble<T>(x))) < 1e-3) x = dist(rng);
      v = fromDouble<T>(x);
    }
  } else {  // bounds beyond T's range clamp to it
    using Draw = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    const Draw first = lo <= double(std::numeric_limits<T>::lowest()) ? Draw(std::numeric_limits<T>::lowest())
                                                                      : Draw(std::ceil(lo));
    const Draw last = hi >= double(std::numeric_limits<T>::max()) ? Draw(std::numeric_limits<T>::max())
                                                                  : Draw(std::floor(hi));
    std::uniform_int_distribution<Draw> dist(first, last);
    for (T& v : values) {
      Draw x = dist(rng);
      while (avoidZero && x == 0 && first != last) x = dist(rng);
      v = T(x);
    }
  }
  return values;
}

inline std::vector<uint8_t> randomBools(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> values(static_cast<size_t>(n));
  for (uint8_t& v : values) v = uint8_t(rng() & 1);
  return values;
}

inline int64_t elementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// A buffer a launch writes, from byte `offset` on (the bytes before are not the launch's).
struct WrittenRegion {
  const DeviceBuffer* buffer;
  size_t offset = 0;
};

// Runs `launch` twice, on its outputs filled with 0x5A bytes and then with 0xFF bytes; both runs
// must succeed and give the same bytes, so every byte of each region was written (the kernels are
// deterministic). The buffers keep the result.
inline ::testing::AssertionResult runPoisoned(const std::vector<WrittenRegion>& outputs,
                                              const std::function<cudaError_t()>& launch) {
  std::vector<std::vector<uint8_t>> first;
  for (uint8_t poison : {uint8_t(0x5A), uint8_t(0xFF)}) {
    for (const WrittenRegion& out : outputs) out.buffer->fill(poison);
    const cudaError_t launched = launch();
    if (launched != cudaSuccess) return ::testing::AssertionFailure() << "launch: " << cudaGetErrorString(launched);
    const cudaError_t synced = cudaDeviceSynchronize();
    if (synced != cudaSuccess) return ::testing::AssertionFailure() << "kernel: " << cudaGetErrorString(synced);
    if (poison == 0x5A) {
      for (const WrittenRegion& out : outputs) first.push_back(out.buffer->read<uint8_t>());
      continue;
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      const std::vector<uint8_t> second = outputs[k].buffer->read<uint8_t>();
      for (size_t i = outputs[k].offset; i < second.size(); ++i)
        if (first[k][i] != second[i])
          return ::testing::AssertionFailure() << "output " << k << " byte " << i << " was not written (or the kernel "
                                               << "is not deterministic)";
    }
  }
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult runPoisoned(const std::vector<const DeviceBuffer*>& outputs,
                                              const std::function<cudaError_t()>& launch) {
  std::vector<WrittenRegion> regions;
  for (const DeviceBuffer* out : outputs) regions.push_back({out, 0});
  return runPoisoned(regions, launch);
}
inline ::testing::AssertionResult runPoisoned(const DeviceBuffer& out, const std::function<cudaError_t()>& launch,
                                              size_t offset = 0) {
  return runPoisoned(std::vector<WrittenRegion>{{&out, offset}}, launch);
}

template <class T>
double defaultTolerance() {
  if constexpr (std::is_same_v<T, float>) return 1e-5;
  else if constexpr (std::is_same_v<T, double>) return 1e-12;
  else if constexpr (std::is_same_v<T, Float16>) return 1e-3;
  else if constexpr (std::is_same_v<T, BFloat16>) return 1e-2;
  else if constexpr (kIsCpuNarrowFloat<T>) return 1e-1;
  else return 0;
}

// Integers and bools compare exactly. Floats: NaN must meet NaN and infinities must be equal;
// the finite rest compares by relative L2 (||got - want|| / ||want||, absolute where want is all
// zero).
template <class T>
::testing::AssertionResult closeTo(const std::vector<T>& got, const std::vector<T>& want,
                                   double tolerance = defaultTolerance<T>()) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  if constexpr (!kIsFloatLike<T>) {
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != want[i])
        return ::testing::AssertionFailure() << "element " << i << ": got " << +got[i] << ", want " << +want[i];
    return ::testing::AssertionSuccess();
  } else {
    double error = 0, norm = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double g = toDouble(got[i]), w = toDouble(want[i]);
      if (std::isnan(w) || std::isnan(g)) {
        if (std::isnan(w) && std::isnan(g)) continue;
        return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
      }
      if (std::isinf(w) || std::isinf(g)) {
        if (g == w) continue;
        return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
      }
      error += (g - w) * (g - w);
      norm += w * w;
    }
    const double relative = norm > 0 ? std::sqrt(error / norm) : std::sqrt(error);
    if (relative > tolerance)
      return ::testing::AssertionFailure() << "relative L2 error " << relative << " above " << tolerance;
    return ::testing::AssertionSuccess();
  }
}

// Bytes of a host vector, and a vector from bytes.
template <class T>
std::vector<T> fromBytes(const std::vector<uint8_t>& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

// X(T) for the CPU element types of each group.
#define KILN_TEST_FLOAT_TYPES(X) X(float) X(double) X(Float16) X(BFloat16)
#define KILN_TEST_INTEGER_TYPES(X) \
  X(int8_t) X(int16_t) X(int32_t) X(int64_t) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t)

}  // namespace kiln::test
