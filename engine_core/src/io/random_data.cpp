#include <kiln/random_data.h>

#include <kiln/error.h>

#include "kernels/cpu/common/numeric_types.h"  // the element types HostTensor::data<T>() names

#include <cmath>
#include <type_traits>

namespace kiln {
namespace {

// SplitMix64: tiny, seedable, and the same numbers on every platform.
class RandomBits {
 public:
  explicit RandomBits(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

template <class T>
T randomValue(RandomBits& bits) {
  if constexpr (std::is_same_v<T, bool>) {
    return (bits.next() & 1) != 0;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "kiln" + std::to_string(bits.next() % 1000);
  } else if constexpr (std::is_integral_v<T>) {
    return T(1 + bits.next() % 4);
  } else {
    double v = bits.uniform() * 2 - 1;
    if (std::abs(v) < 1.0 / 64) v = 0.5;  // keeps reduced-precision types away from zero
    if constexpr (std::is_same_v<T, double>) return v;
    else return T(float(v));
  }
}

template <class T>
void fillRandom(HostTensor& tensor, RandomBits& bits) {
  T* out = tensor.data<T>();
  for (int64_t i = 0; i < tensor.elementCount(); ++i) out[i] = randomValue<T>(bits);
}

}  // namespace

uint64_t seedForTensor(uint64_t seed, const std::string& tensorName) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a: stable across runs and platforms
  for (unsigned char c : tensorName) h = (h ^ c) * 0x100000001B3ull;
  return seed ^ h;
}

HostTensor randomTensor(DataType dtype, std::vector<int64_t> dims, uint64_t seed) {
  if (dtype == DataType::kUndefined)
    throw Error(ErrorCode::kInvalidArgument, "cannot make random values of an undefined element type");
  HostTensor tensor(dtype, std::move(dims));
  RandomBits bits(seed);
  switch (dtype) {
    case DataType::kFloat32: fillRandom<float>(tensor, bits); break;
    case DataType::kFloat16: fillRandom<kernels::Float16>(tensor, bits); break;
    case DataType::kBFloat16: fillRandom<kernels::BFloat16>(tensor, bits); break;
    case DataType::kFloat64: fillRandom<double>(tensor, bits); break;
    case DataType::kFloat8E4M3: fillRandom<kernels::Float8E4M3>(tensor, bits); break;
    case DataType::kFloat8E5M2: fillRandom<kernels::Float8E5M2>(tensor, bits); break;
    case DataType::kInt8: fillRandom<int8_t>(tensor, bits); break;
    case DataType::kInt16: fillRandom<int16_t>(tensor, bits); break;
    case DataType::kInt32: fillRandom<int32_t>(tensor, bits); break;
    case DataType::kInt64: fillRandom<int64_t>(tensor, bits); break;
    case DataType::kUInt8: fillRandom<uint8_t>(tensor, bits); break;
    case DataType::kUInt16: fillRandom<uint16_t>(tensor, bits); break;
    case DataType::kUInt32: fillRandom<uint32_t>(tensor, bits); break;
    case DataType::kUInt64: fillRandom<uint64_t>(tensor, bits); break;
    case DataType::kBool: fillRandom<bool>(tensor, bits); break;
    case DataType::kString: fillRandom<std::string>(tensor, bits); break;
    case DataType::kUndefined: break;
  }
  return tensor;
}

}  // namespace kiln
