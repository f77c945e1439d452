// CPU and CUDA engines agree exactly on the integer ops: MatMulInteger and QLinearMatMul
// (per-tensor and per-row / per-column zero points and scales, broadcast batches), ConvInteger and
// QLinearConv (pads, strides, groups, per-channel weights' zero points and scales, bias), and
// DynamicQuantizeLinear, with zero points and scales as graph inputs (device data) and as weights.
// Scales and DynamicQuantizeLinear's inputs are exact in fp16, so the fp16 builds requantize the
// same numbers as the CPU.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <random>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

constexpr int32_t kUInt8 = onnx::TensorProto::UINT8;
constexpr int32_t kInt8 = onnx::TensorProto::INT8;

HostTensor eightBit(DataType type, const std::vector<int64_t>& dims, uint32_t seed) {
  HostTensor t(type, dims);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(type == DataType::kInt8 ? -128 : 0, type == DataType::kInt8 ? 127 : 255);
  for (int64_t i = 0; i < t.elementCount(); ++i) {
    const int v = d(rng);
    if (type == DataType::kInt8) t.data<int8_t>()[i] = int8_t(v);
    else t.data<uint8_t>()[i] = uint8_t(v);
  }
  return t;
}

DataType dataTypeOf(int32_t onnxType) { return onnxType == kInt8 ? DataType::kInt8 : DataType::kUInt8; }

TEST(IntegerMathAgreement, MatMulIntegerWithZeroPoints) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Case {
    std::vector<int64_t> a, b;
    bool perRow, perColumn;
  };
  for (const Case& c : std::vector<Case>{{{4, 3}, {3, 2}, false, false},
                                         {{2, 5, 17}, {17, 7}, true, true},
                                         {{3, 1, 9}, {3, 9, 4}, false, true},
                                         {{1, 1}, {1, 1}, false, false}})
    for (int32_t aType : {kUInt8, kInt8})
      for (int32_t bType : {kUInt8, kInt8}) {
        SCOPED_TRACE(dimsToString(c.a) + " x " + dimsToString(c.b));
        const int64_t M = c.a[c.a.size() - 2], N = c.b.back();
        ModelBuilder mb(10);
        mb.input("a", aType, c.a).input("b", bType, c.b).input("a_zero", aType, {c.perRow ? M : 1});
        mb.input("b_zero", bType, {c.perColumn ? N : 1}).output("y").output("y_no_zero");
        mb.node("MatMulInteger", {"a", "b", "a_zero", "b_zero"}, {"y"}, "matmul_integer");
        mb.node("MatMulInteger", {"a", "b"}, {"y_no_zero"}, "matmul_integer_no_zero");
        test::expectBackendsAgree(mb.bytes(), {{"a", eightBit(dataTypeOf(aType), c.a, 1)},
                                               {"b", eightBit(dataTypeOf(bType), c.b, 2)},
                                               {"a_zero", eightBit(dataTypeOf(aType), {c.perRow ? M : 1}, 3)},
                                               {"b_zero", eightBit(dataTypeOf(bType), {c.perColumn ? N : 1}, 4)}});
      }
}

TEST(IntegerMathAgreement, QLinearMatMulRequantizes) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& a : {std::vector<int64_t>{2, 4}, {2, 3, 9}})
    for (int32_t type : {kUInt8, kInt8})
      for (Precision precision : test::kFloatPrecisions) {
        SCOPED_TRACE(dimsToString(a) + " " + toString(precision));
        const std::vector<int64_t> b{a.back(), 5};
        const int64_t M = a[a.size() - 2];
        ModelBuilder mb(10);
        mb.input("a", type, a).input("a_scale", kFloat, {M}).input("a_zero", type, {1}).input("b", type, b);
        mb.input("b_scale", kFloat, {1}).input("b_zero", type, {5}).output("y");
        mb.initializer("y_scale", HostTensor::fromVector<float>({1}, {0.75f}));
        mb.initializer("y_zero", type == kInt8 ? HostTensor::fromVector<int8_t>({1}, {-7}) : HostTensor::fromVector<uint8_t>({1}, {118}));
        mb.node("QLinearMatMul", {"a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "y_scale", "y_zero"}, {"y"},
                "qlinear_matmul");
        std::vector<float> aScale;
        for (int64_t i = 0; i < M; ++i) aScale.push_back(0.0078125f * float(i + 1));  // exact in fp16
        test::expectBackendsAgree(mb.bytes(), {{"a", eightBit(dataTypeOf(type), a, 5)},
                                               {"a_scale", HostTensor::fromVector<float>({M}, aScale)},
                                               {"a_zero", eightBit(dataTypeOf(type), {1}, 6)},
                                               {"b", eightBit(dataTypeOf(type), b, 7)},
                                               {"b_scale", HostTensor::fromVector<float>({1}, {0.046875f})},
                                               {"b_zero", eightBit(dataTypeOf(type), {5}, 8)}},
                                  precision);
      }
}

TEST(IntegerMathAgreement, ConvIntegerWithPadsStridesAndGroups) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Case {
    std::vector<int64_t> x, w, pads, strides;
    int64_t group;
    bool perChannel;
  };
  for (const Case& c : std::vector<Case>{{{1, 1, 3, 3}, {1, 1, 2, 2}, {0, 0, 0, 0}, {1, 1}, 1, false},
                                         {{1, 1, 3, 3}, {1, 1, 2, 2}, {1, 1, 1, 1}, {1, 1}, 1, false},
                                         {{2, 4, 9, 7}, {6, 2, 3, 3}, {1, 0, 1, 2}, {2, 1}, 2, true},
                                         {{1, 3, 11}, {2, 3, 3}, {1, 1}, {2}, 1, true}})
    for (int32_t xType : {kUInt8, kInt8}) {
      SCOPED_TRACE(dimsToString(c.x) + " * " + dimsToString(c.w));
      const int64_t channels = c.w[0];
      ModelBuilder mb(10);
      mb.input("x", xType, c.x).input("x_zero", xType, {}).output("y");
      mb.initializer("w", eightBit(DataType::kUInt8, c.w, 9));
      mb.initializer("w_zero", eightBit(DataType::kUInt8, {c.perChannel ? channels : 1}, 10));
      auto& node = mb.node("ConvInteger", {"x", "w", "x_zero", "w_zero"}, {"y"}, "conv_integer");
      ModelBuilder::setInts(node, "pads", c.pads);
      ModelBuilder::setInts(node, "strides", c.strides);
      ModelBuilder::setInt(node, "group", c.group);
      test::expectBackendsAgree(mb.bytes(), {{"x", eightBit(dataTypeOf(xType), c.x, 11)},
                                             {"x_zero", eightBit(dataTypeOf(xType), {}, 12)}});
    }
}

TEST(IntegerMathAgreement, QLinearConvRequantizesWithBias) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{1, 1, 7, 7}, {2, 3, 6, 5}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(x) + " " + toString(precision));
      const int64_t inChannels = x[1], channels = 4;
      ModelBuilder mb(10);
      mb.input("x", kUInt8, x).input("x_scale", kFloat, {}).input("x_zero", kUInt8, {}).output("y");
      mb.initializer("w", eightBit(DataType::kInt8, {channels, inChannels, 3, 3}, 13));
      mb.initializer("w_scale", HostTensor::fromVector<float>({channels}, {0.0625f, 0.125f, 0.03125f, 0.25f}));
      mb.initializer("w_zero", HostTensor::fromVector<int8_t>({channels}, {0, 0, 0, 0}));
      mb.initializer("y_scale", HostTensor::scalar<float>(4.0f)).initializer("y_zero", HostTensor::scalar<uint8_t>(100));
      mb.initializer("bias", HostTensor::fromVector<int32_t>({channels}, {-300, 0, 41, 1000}));
      auto& node = mb.node("QLinearConv", {"x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "bias"},
                           {"y"}, "qlinear_conv");
      ModelBuilder::setInts(node, "pads", {1, 1, 1, 1});
      test::expectBackendsAgree(mb.bytes(), {{"x", eightBit(DataType::kUInt8, x, 14)},
                                             {"x_scale", HostTensor::scalar<float>(0.5f)},
                                             {"x_zero", HostTensor::scalar<uint8_t>(128)}},
                                precision);
    }
}

// Values on a 1/8 step in [-4, 4): exact in fp16.
HostTensor eighths(const std::vector<int64_t>& dims, uint32_t seed, int lo, int hi) {
  HostTensor t(DataType::kFloat32, dims);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.elementCount(); ++i) t.data<float>()[i] = float(d(rng)) / 8;
  return t;
}

TEST(IntegerMathAgreement, DynamicQuantizeLinear) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Case {
    std::vector<int64_t> dims;
    int lo, hi;
  };
  for (const Case& c : std::vector<Case>{{{6}, -32, 31}, {{3, 4}, 1, 31}, {{2, 333}, -32, -1}, {{1}, 5, 5}, {{0}, 0, 1}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(c.dims) + " " + toString(precision));
      ModelBuilder mb(11);
      mb.input("x", kFloat, c.dims).output("y").output("y_scale").output("y_zero");
      mb.node("DynamicQuantizeLinear", {"x"}, {"y", "y_scale", "y_zero"}, "dynamic_quantize");
      test::expectBackendsAgree(mb.bytes(), {{"x", eighths(c.dims, 15, c.lo, c.hi)}}, precision);
    }
}

}  // namespace
