// CPU and CUDA engines agree on QuantizeLinear and DequantizeLinear: per-tensor and per-axis scales
// and zero points as weights and as graph inputs (device data), every integer type the schema
// takes, with and without zero points. The quantized values compare exactly.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

TEST(QuantAgreement, PerTensorRoundTripInEveryIntegerType) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<std::pair<int32_t, HostTensor>> zeroPoints = {
      {onnx::TensorProto::UINT8, HostTensor::scalar<uint8_t>(128)},
      {onnx::TensorProto::INT8, HostTensor::scalar<int8_t>(-3)},
      {onnx::TensorProto::UINT16, HostTensor::scalar<uint16_t>(1000)},
      {onnx::TensorProto::INT16, HostTensor::scalar<int16_t>(-20)}};
  for (const auto& [type, zero] : zeroPoints)
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 3, 4}, {1, 1001}, {0, 5}})
      for (Precision precision : test::kFloatPrecisions) {
        SCOPED_TRACE(std::string(toString(zero.dtype())) + " " + dimsToString(dims) + " " + toString(precision));
        ModelBuilder mb;
        mb.input("x", kFloat, dims).output("q").output("y");
        // A scale small enough for 8-bit types to saturate at the ends of [-4, 4).
        mb.initializer("scale", HostTensor::scalar<float>(0.0234375f)).initializer("zero", zero);
        mb.node("QuantizeLinear", {"x", "scale", "zero"}, {"q"}, "quantize");
        mb.node("DequantizeLinear", {"q", "scale", "zero"}, {"y"}, "dequantize");
        test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 131, -4.0f, 4.0f)}}, precision);
      }
}

TEST(QuantAgreement, PerAxisScalesFromWeightsAndGraphInputs) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("x", kFloat, {2, 3, 4}).input("scales_in", kFloat, {4}).input("zeros_in", onnx::TensorProto::INT8, {4});
    mb.output("q1").output("y1").output("q_last").output("no_zero");
    mb.initializer("scales", HostTensor::fromVector<float>({3}, {0.01f, 0.05f, 0.2f}));
    mb.initializer("zeros", HostTensor::fromVector<uint8_t>({3}, {0, 100, 255}));
    mb.node("QuantizeLinear", {"x", "scales", "zeros"}, {"q1"}, "quantize_axis1");
    mb.node("DequantizeLinear", {"q1", "scales", "zeros"}, {"y1"}, "dequantize_axis1");
    ModelBuilder::setInt(mb.node("QuantizeLinear", {"x", "scales_in", "zeros_in"}, {"q_last"}, "quantize_axis_last"),
                         "axis", -1);
    mb.node("QuantizeLinear", {"x", "scales"}, {"no_zero"}, "quantize_no_zero");
    test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({2, 3, 4}, 132, -3.0f, 3.0f)},
                                           {"scales_in", HostTensor::fromVector<float>({4}, {0.02f, 0.1f, 0.03f, 0.5f})},
                                           {"zeros_in", HostTensor::fromVector<int8_t>({4}, {-5, 0, 7, 127})}},
                              precision);
  }
}

// Integer inputs: int32 quantizes and dequantizes too (an accumulator's bias, say).
TEST(QuantAgreement, Int32InputsAndEightBitData) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("acc", kInt32, {3, 5}).input("q", onnx::TensorProto::INT8, {3, 5}).output("from_int32").output("from_int8");
    mb.output("requantized");
    mb.initializer("scale", HostTensor::scalar<float>(0.125f)).initializer("zero", HostTensor::scalar<int8_t>(2));
    mb.node("DequantizeLinear", {"acc", "scale"}, {"from_int32"}, "dequantize_int32");
    mb.node("DequantizeLinear", {"q", "scale", "zero"}, {"from_int8"}, "dequantize_int8");
    mb.node("QuantizeLinear", {"acc", "scale", "zero"}, {"requantized"}, "quantize_int32");
    std::vector<int64_t> acc(15), q(15);
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = int64_t(i * 2654435761u % 2001) - 1000, q[i] = int64_t(i * 37 % 255) - 127;
    HostTensor q8(DataType::kInt8, {3, 5});
    for (size_t i = 0; i < q.size(); ++i) q8.data<int8_t>()[i] = int8_t(q[i]);
    test::expectBackendsAgree(mb.bytes(), {{"acc", test::int32s({3, 5}, acc)}, {"q", q8}}, precision);
  }
}

// The kernels read float32, float16 and bfloat16 scales; the CPU takes a float64 one.
TEST(QuantAgreement, Float64ScaleRunsOnTheCpu) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb;
  mb.input("x", kFloat, {2, 7}).output("q");
  mb.initializer("scale", HostTensor::scalar<double>(0.03125));
  mb.node("QuantizeLinear", {"x", "scale"}, {"q"}, "quantize");
  const auto agreement = test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({2, 7}, 133, -2.0f, 2.0f)}},
                                                   Precision::kFP32, /*requireEveryLayerOnGpu=*/false);
  EXPECT_FALSE(agreement.everyLayerOnGpu);
}

}  // namespace
