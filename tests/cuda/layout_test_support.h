#pragma once
// Shared by the tests of the data movement, indexing, resize, pool and quant kernels: seeded random
// tensors of any ElementType (as raw bytes), device buffers that start poisoned, and comparisons
// (bit-exact for data movement, relative L2 for arithmetic; NaN never passes).
#include "cuda/device_buffer.h"
#include "gpu_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/common/parallel.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace kiln::test {

using kernels::cuda::elementBytes;
using kernels::cuda::ElementType;
using Bytes = std::vector<uint8_t>;

// The CPU references here are small: run them on the calling thread, so that thousands of them do
// not each wake (and leave spinning) OpenMP's team on a machine with few cores.
inline const bool kSingleThreadedReferences = [] {
  kernels::setCpuThreadCount(1);
  return true;
}();

inline int64_t countOf(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

inline size_t byteSize(ElementType type, int64_t count) { return size_t(count) * elementBytes(type); }

// The dtypes every data-movement test runs (one per element size, plus bool and fp8).
inline const std::vector<ElementType>& movementTypes() {
  static const std::vector<ElementType> types{ElementType::kFloat32, ElementType::kFloat16, ElementType::kInt64,
                                              ElementType::kBool,    ElementType::kUInt8,   ElementType::kFloat8E4M3};
  return types;
}

// A float value as the bits of `type` (floats round to nearest even, integers truncate).
inline uint64_t bitsOf(double value, ElementType type) {
  using namespace kernels;
  switch (type) {
    case ElementType::kFloat32: return floatBits(float(value));
    case ElementType::kFloat64: {
      uint64_t u;
      std::memcpy(&u, &value, 8);
      return u;
    }
    case ElementType::kFloat16: return Float16(float(value)).bits;
    case ElementType::kBFloat16: return BFloat16(float(value)).bits;
    case ElementType::kFloat8E4M3: return Float8E4M3(float(value)).bits;
    case ElementType::kFloat8E5M2: return Float8E5M2(float(value)).bits;
    case ElementType::kBool: return value != 0;
    case ElementType::kUInt64: return uint64_t(value);
    default: return uint64_t(int64_t(value));
  }
}

// Element i of a byte tensor as a double.
inline double valueAt(const Bytes& data, ElementType type, int64_t i) {
  using namespace kernels;
  const uint8_t* p = data.data() + size_t(i) * elementBytes(type);
  auto load = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (type) {
    case ElementType::kFloat32: return load(float{});
    case ElementType::kFloat64: return load(double{});
    case ElementType::kFloat16: return Float16::toFloat(load(uint16_t{}));
    case ElementType::kBFloat16: return float(BFloat16::fromBits(load(uint16_t{})));
    case ElementType::kFloat8E4M3: return Float8E4M3::toFloat(load(uint8_t{}));
    case ElementType::kFloat8E5M2: return Float8E5M2::toFloat(load(uint8_t{}));
    case ElementType::kInt8: return load(int8_t{});
    case ElementType::kInt16: return load(int16_t{});
    case ElementType::kInt32: return load(int32_t{});
    case ElementType::kInt64: return double(load(int64_t{}));
    case ElementType::kUInt8:
    case ElementType::kBool: return load(uint8_t{});
    case ElementType::kUInt16: return load(uint16_t{});
    case ElementType::kUInt32: return load(uint32_t{});
    case ElementType::kUInt64: return double(load(uint64_t{}));
  }
  return 0;
}

inline std::vector<double> valuesOf(const Bytes& data, ElementType type) {
  std::vector<double> values(data.size() / elementBytes(type));
  for (size_t i = 0; i < values.size(); ++i) values[i] = valueAt(data, type, int64_t(i));
  return values;
}

inline void storeBits(Bytes& data, ElementType type, int64_t i, uint64_t bits) {
  std::memcpy(data.data() + size_t(i) * elementBytes(type), &bits, elementBytes(type));  // little endian
}

inline Bytes fromValues(const std::vector<double>& values, ElementType type) {
  Bytes data(byteSize(type, int64_t(values.size())));
  for (size_t i = 0; i < values.size(); ++i) storeBits(data, type, int64_t(i), bitsOf(values[i], type));
  return data;
}

// Seeded random elements: floats in +-[0.05, 4], integers non-zero and never all-ones bits (the
// poison pattern), bool 0 / 1. So an element the kernel never wrote always shows.
inline Bytes randomElements(ElementType type, int64_t count, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Bytes data(byteSize(type, count));
  std::uniform_real_distribution<double> magnitude(0.05, 4.0);
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    const double real = (rng() & 1 ? -1 : 1) * magnitude(rng);
    switch (type) {
      case ElementType::kFloat32:
      case ElementType::kFloat64:
      case ElementType::kFloat16:
      case ElementType::kBFloat16:
      case ElementType::kFloat8E4M3:
      case ElementType::kFloat8E5M2: bits = bitsOf(real, type); break;
      case ElementType::kBool: bits = rng() & 1; break;
      case ElementType::kInt8:
      case ElementType::kInt16:
      case ElementType::kInt32:
      case ElementType::kInt64: {
        int64_t v = int64_t(rng() % 200) - 100;
        if (v == 0 || v == -1) v = 7;
        if (type == ElementType::kInt64 && (rng() & 1)) v *= int64_t(1) << 33;  // use the high bytes too
        bits = uint64_t(v);
        break;
      }
      default: {  // unsigned: 1 .. max - 1
        const uint64_t max = elementBytes(type) == 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * elementBytes(type))) - 1;
        bits = 1 + rng() % (max - 1);
        break;
      }
    }
    storeBits(data, type, i, bits);
  }
  return data;
}

// Index tensor bytes (int32 or int64) holding `values`.
inline Bytes indexBytes(const std::vector<int64_t>& values, ElementType type) {
  Bytes data(byteSize(type, int64_t(values.size())));
  for (size_t i = 0; i < values.size(); ++i) storeBits(data, type, int64_t(i), uint64_t(values[i]));
  return data;
}

// Bit-exact, element by element; names the first mismatching element.
inline ::testing::AssertionResult sameElements(const Bytes& actual, const Bytes& expected, size_t elementSize) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "sizes differ: " << actual.size() << " vs " << expected.size() << " bytes";
  for (size_t i = 0; i < actual.size(); i += elementSize)
    if (std::memcmp(&actual[i], &expected[i], elementSize) != 0) {
      uint64_t a = 0, e = 0;
      std::memcpy(&a, &actual[i], elementSize);
      std::memcpy(&e, &expected[i], elementSize);
      return ::testing::AssertionFailure() << "element " << i / elementSize << " of " << actual.size() / elementSize
                                           << " is 0x" << std::hex << a << ", expected 0x" << e;
    }
  return ::testing::AssertionSuccess();
}

// Runs `launch` (which writes `out`) over 0xFF bytes and again over zero bytes and compares both
// results bit-exact: an element the kernel skips cannot pass by happening to equal the poison.
template <class Launch>
::testing::AssertionResult writesEveryElement(DeviceBuffer& out, Launch&& launch, const Bytes& expected,
                                              size_t elementSize) {
  for (uint8_t poison : {uint8_t(0xFF), uint8_t(0)}) {
    out.fill(poison);
    if (const cudaError_t status = launch(); status != cudaSuccess)
      return ::testing::AssertionFailure() << "launch failed: " << cudaGetErrorString(status);
    if (auto same = sameElements(out.download(), expected, elementSize); !same)
      return same << " (output poisoned with 0x" << std::hex << int(poison) << ")";
  }
  return ::testing::AssertionSuccess();
}

// Poisons `out` with 0xFF bytes (NaN in every float type), runs `launch` and waits for it, so an
// element the kernel skips fails the comparison that follows.
template <class Launch>
::testing::AssertionResult launchOverPoison(const DeviceBuffer& out, Launch&& launch) {
  out.poison();
  if (const cudaError_t status = launch(); status != cudaSuccess)
    return ::testing::AssertionFailure() << "launch failed: " << cudaGetErrorString(status);
  if (const cudaError_t status = cudaDeviceSynchronize(); status != cudaSuccess)
    return ::testing::AssertionFailure() << "kernel failed: " << cudaGetErrorString(status);
  return ::testing::AssertionSuccess();
}

// Each of n [rows, cols] blocks transposed to [cols, rows]: NCHW [n, c, hw] to NHWC with (c, hw),
// back with (hw, c).
inline std::vector<double> transposedBlocks(const std::vector<double>& v, int64_t n, int64_t rows, int64_t cols) {
  std::vector<double> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) out[size_t((b * cols + c) * rows + r)] = v[size_t((b * rows + r) * cols + c)];
  return out;
}

// Per-precision tolerance on the relative L2 error of arithmetic results.
inline double toleranceFor(ElementType type) {
  switch (type) {
    case ElementType::kFloat64: return 1e-12;
    case ElementType::kFloat32: return 1e-5;
    case ElementType::kFloat16: return 1e-3;
    case ElementType::kBFloat16: return 8e-3;
    default: return 0;
  }
}

// Relative L2 error within `tolerance`, every element within a loose per-element bound (so one bad
// element of many still shows), and no NaN anywhere.
inline ::testing::AssertionResult closeValues(const std::vector<double>& actual, const std::vector<double>& expected,
                                              double tolerance) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "sizes differ: " << actual.size() << " vs " << expected.size();
  double error = 0, norm = 0, scale = 0;
  for (double e : expected) scale = std::max(scale, std::abs(e));
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(actual[i]) || std::isnan(expected[i]))
      return ::testing::AssertionFailure() << "NaN at element " << i << " (expected " << expected[i] << ")";
    const double d = actual[i] - expected[i];
    if (std::abs(d) > 50 * tolerance * std::max(1.0, std::max(std::abs(expected[i]), scale)))
      return ::testing::AssertionFailure() << "element " << i << " is " << actual[i] << ", expected " << expected[i];
    error += d * d;
    norm += expected[i] * expected[i];
  }
  const double relative = norm > 0 ? std::sqrt(error / norm) : std::sqrt(error);
  if (relative > tolerance)
    return ::testing::AssertionFailure() << "relative L2 error " << relative << " above " << tolerance;
  return ::testing::AssertionSuccess();
}

// Calls fn(tag) with the unsigned storage type of that many bytes: the CPU data-movement kernels
// are instantiated by element size too.
template <class Fn>
void withStorage(size_t elementSize, Fn&& fn) {
  switch (elementSize) {
    case 1: fn(uint8_t{}); break;
    case 2: fn(uint16_t{}); break;
    case 4: fn(uint32_t{}); break;
    default: fn(uint64_t{}); break;
  }
}

// Milliseconds a run of `launch` (returning a cudaError_t) takes on the default stream: the best of 5
// averages of 10, after 3 warm-up runs (the speed tests' number; failed launches fail the test).
template <class Launch>
double bestMilliseconds(Launch&& launch) {
  for (int i = 0; i < 3; ++i) EXPECT_EQ(launch(), cudaSuccess);
  cudaEvent_t start, stop;
  cudaEventCreate(&start), cudaEventCreate(&stop);
  float best = INFINITY;
  for (int trial = 0; trial < 5; ++trial) {
    cudaEventRecord(start);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(launch(), cudaSuccess);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    best = std::min(best, ms / 10);
  }
  cudaEventDestroy(start), cudaEventDestroy(stop);
  return double(best);
}

}  // namespace kiln::test
