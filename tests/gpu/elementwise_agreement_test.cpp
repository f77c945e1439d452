// CPU and CUDA engines agree on the elementwise ops, at several sizes (odd ones, batch 1,
// broadcasting) and precisions.
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

const std::vector<std::vector<int64_t>> kShapes = {{1}, {7}, {3, 33}, {2, 5, 1001}, {1, 3, 8, 8}};

TEST(ElementwiseAgreement, UnaryOpsAtEverySize) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Gelu", "Exp", "Abs", "Neg", "Softplus", "HardSwish", "Erf"})
    for (const auto& dims : kShapes)
      for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
        SCOPED_TRACE(std::string(op) + " " + dimsToString(dims) + " " + toString(precision));
        ModelBuilder mb;
        mb.input("x", kFloat, dims).output("y");
        mb.node(op, {"x"}, {"y"}, "op");
        test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 5)}}, precision);
      }
}

TEST(ElementwiseAgreement, BroadcastingBinaryOps) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs = {
      {{7}, {7}}, {{3, 33}, {33}}, {{2, 5, 9}, {5, 1}}, {{1, 3, 8, 8}, {1, 3, 1, 1}}, {{4, 1, 6}, {1, 5, 1}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"})
    for (const auto& [a, b] : pairs) {
      SCOPED_TRACE(std::string(op) + " " + dimsToString(a) + " " + dimsToString(b));
      ModelBuilder mb;
      mb.input("a", kFloat, a).input("b", kFloat, b).output("y");
      mb.node(op, {"a", "b"}, {"y"}, "op");
      const bool pow = std::string(op) == "Pow";
      test::expectBackendsAgree(mb.bytes(), {{"a", test::randomFloats(a, 1, pow ? 0.5f : -1.0f, 2.0f)},
                                             {"b", test::randomFloats(b, 2, pow ? -2.0f : 0.25f, 2.0f)}});
    }
}

TEST(ElementwiseAgreement, ComparisonsWhereAndClip) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb;
  mb.input("a", kFloat, {3, 17}).input("b", kFloat, {17}).output("y").output("c");
  mb.initializer("lo", HostTensor::scalar<float>(-0.3f)).initializer("hi", HostTensor::scalar<float>(0.4f));
  mb.node("Greater", {"a", "b"}, {"gt"}, "greater");
  mb.node("Where", {"gt", "a", "b"}, {"w"}, "where");
  mb.node("Clip", {"w", "lo", "hi"}, {"y"}, "clip");
  mb.node("Cast", {"gt"}, {"c"}, "cast");
  ModelBuilder::setInt(mb.model().mutable_graph()->mutable_node(3)[0], "to", kInt32);
  test::expectBackendsAgree(mb.bytes(), {{"a", test::randomFloats({3, 17}, 3)}, {"b", test::randomFloats({17}, 4)}});
}

}  // namespace
