#pragma once
// Helpers for op tests: build a one-node ONNX model, run it on the CPU reference executor, and make
// seeded random inputs of any element type.
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace kiln::test {

inline int32_t onnxTypeOf(DataType type) {
  switch (type) {
    case DataType::kFloat32: return onnx::TensorProto::FLOAT;
    case DataType::kFloat64: return onnx::TensorProto::DOUBLE;
    case DataType::kFloat16: return onnx::TensorProto::FLOAT16;
    case DataType::kBFloat16: return onnx::TensorProto::BFLOAT16;
    case DataType::kInt8: return onnx::TensorProto::INT8;
    case DataType::kUInt8: return onnx::TensorProto::UINT8;
    case DataType::kInt16: return onnx::TensorProto::INT16;
    case DataType::kUInt16: return onnx::TensorProto::UINT16;
    case DataType::kInt32: return onnx::TensorProto::INT32;
    case DataType::kInt64: return onnx::TensorProto::INT64;
    default: return onnx::TensorProto::UNDEFINED;
  }
}

// Declares each input with its tensor's type and shape, imports the model and runs it.
inline ValueMap runModel(ModelBuilder& mb, const std::vector<std::pair<std::string, HostTensor>>& inputs) {
  ValueMap feeds;
  for (const auto& [name, tensor] : inputs) {
    mb.input(name, onnxTypeOf(tensor.dtype()), tensor.dims());
    feeds[name] = tensor;
  }
  return ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run(feeds);
}

// Seeded values in [lo, hi] (integers: whole numbers), stored as T; never all zero.
template <class T>
HostTensor randomTensor(std::vector<int64_t> dims, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  HostTensor t(DataTypeOf<T>::value, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.elementCount(); ++i) {
    double v = dist(rng);
    if constexpr (std::is_integral_v<T>) v = std::round(v);
    if (v == 0.0) v = hi > 1.0 ? 1.0 : 0.5;
    p[i] = static_cast<T>(v);
  }
  return t;
}

// The tensor's values as doubles (any numeric type, float16/bfloat16 included).
inline std::vector<double> valuesOf(const HostTensor& t) { return t.toDoubleVector(); }

inline void expectNear(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tolerance * std::max(1.0, std::abs(expected[i]))) << "at index " << i;
}

// Runs `run`, expecting a kiln::Error whose message contains every one of `fragments`.
template <class Fn>
void expectErrorMentioning(Fn&& run, std::vector<std::string> fragments) {
  try {
    run();
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

}  // namespace kiln::test
