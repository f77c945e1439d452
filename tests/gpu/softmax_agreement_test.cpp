// CPU and CUDA engines agree on Softmax, LogSoftmax and Hardmax: opset 11's "coerce to 2-D at
// axis" and opset 13's single axis, every axis of odd shapes (batch 1 included), in fp32, fp16 and
// bf16, and on float64 data. Hardmax runs in fp32 only: rounding to a 16-bit type can tie two
// inputs, and the first of equals then wins where the CPU saw a larger second one.
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

const std::vector<std::vector<int64_t>> kShapes = {{1, 7}, {3, 5, 9}, {2, 3, 4, 5}, {1, 1001}, {5}};

std::string model(int64_t opset, const std::vector<int64_t>& dims, int64_t axis, bool hardmax, int32_t type = kFloat) {
  ModelBuilder mb(opset);
  mb.input("x", type, dims).output("softmax").output("log_softmax");
  if (hardmax) mb.output("hardmax");
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    if (!hardmax && std::string(op) == "Hardmax") continue;
    const std::string out = std::string(op) == "Softmax" ? "softmax" : std::string(op) == "LogSoftmax" ? "log_softmax" : "hardmax";
    ModelBuilder::setInt(mb.node(op, {"x"}, {out}, out), "axis", axis);
  }
  return mb.bytes();
}

TEST(SoftmaxAgreement, EveryAxisBothOpsetSemanticsAndPrecisions) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (int64_t opset : {11, 13})
    for (const auto& dims : kShapes)
      for (int64_t axis = -1; axis < int64_t(dims.size()); ++axis)
        for (Precision precision : {Precision::kFP32, Precision::kFP16, Precision::kBF16}) {
          SCOPED_TRACE("opset " + std::to_string(opset) + " " + dimsToString(dims) + " axis " + std::to_string(axis) +
                       " " + toString(precision));
          const bool hardmax = precision == Precision::kFP32;
          const auto agreement = test::expectBackendsAgree(model(opset, dims, axis, hardmax),
                                                           {{"x", test::randomFloats(dims, 31, -4.0f, 4.0f)}}, precision);
          EXPECT_NE(agreement.gpuLayerOfType("Softmax"), nullptr);
        }
}

TEST(SoftmaxAgreement, Float64Data) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& dims : kShapes) {
    SCOPED_TRACE(dimsToString(dims));
    const HostTensor wide = test::randomFloats(dims, 32, -4.0f, 4.0f);
    HostTensor x(DataType::kFloat64, dims);
    for (int64_t i = 0; i < wide.elementCount(); ++i) x.data<double>()[i] = wide.data<float>()[i];
    test::expectBackendsAgree(model(13, dims, -1, true, onnx::TensorProto::DOUBLE), {{"x", x}});
  }
}

}  // namespace
