// CPU and CUDA engines agree on kiln.Pointwise, the fused elementwise trees (passes/
// fuse_pointwise.cpp), which the CUDA backend runs as one NVRTC kernel or op by op in its
// workspace (pointwise_nvrtc_agreement_test.cpp forces the former): broadcasting chains
// with constants, bool and integer intermediates, Cast, Where and Clip inside, a long chain whose
// intermediates share workspace, at odd sizes and batch 1, in fp32, fp16 and bf16. Each checks the
// fused layer ran on the GPU.
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

constexpr Precision kPrecisions[] = {Precision::kFP32, Precision::kFP16, Precision::kBF16};

void expectFusedOnGpu(const test::Agreement& agreement) {
  EXPECT_NE(agreement.gpuLayerOfType("kiln.Pointwise"), nullptr) << "no kiln.Pointwise layer ran on the GPU";
}

TEST(PointwiseAgreement, BroadcastingChainWithConstants) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{7}, {7}}, {{1, 33}, {33}}, {{2, 5, 9}, {5, 1}}, {{1, 3, 8, 8}, {1, 3, 1, 1}}, {{3, 1, 6}, {1, 5, 1}}};
  for (const auto& [a, b] : shapes)
    for (Precision precision : kPrecisions) {
      SCOPED_TRACE(dimsToString(a) + " " + dimsToString(b) + " " + toString(precision));
      ModelBuilder mb;
      mb.input("a", kFloat, a).input("b", kFloat, b).output("y");
      mb.initializer("half", HostTensor::scalar<float>(0.5f)).initializer("three", HostTensor::scalar<float>(3.0f));
      mb.node("Mul", {"a", "half"}, {"scaled"}, "scale");
      mb.node("Add", {"scaled", "b"}, {"sum"}, "add");
      mb.node("Tanh", {"sum"}, {"t"}, "tanh");
      mb.node("Add", {"t", "three"}, {"shifted"}, "shift");
      mb.node("Mul", {"shifted", "b"}, {"y"}, "gate");
      const auto agreement = test::expectBackendsAgree(
          mb.bytes(), {{"a", test::randomFloats(a, 81)}, {"b", test::randomFloats(b, 82)}}, precision);
      expectFusedOnGpu(agreement);
    }
}

// Both tactics of the fused tree that ends in Clip: op by op, and one NVRTC kernel.
TEST(PointwiseAgreement, BoolIntermediatesCastWhereAndClip) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1, 17}, {3, 5, 7}, {1001}})
    for (Precision precision : kPrecisions)
      for (const std::string tactic : {"cuda.kiln.pointwise.", "nvrtc.pointwise."}) {
        SCOPED_TRACE(dimsToString(dims) + " " + toString(precision) + " " + tactic);
        ModelBuilder mb(13);
        mb.input("a", kFloat, dims).input("b", kFloat, {dims.back()}).output("y");
        mb.initializer("lo", HostTensor::scalar<float>(-0.3f)).initializer("hi", HostTensor::scalar<float>(0.4f));
        mb.node("Less", {"a", "b"}, {"less"}, "less");
        mb.node("Not", {"less"}, {"not_less"}, "not");
        ModelBuilder::setInt(mb.node("Cast", {"not_less"}, {"mask"}, "cast"), "to", kFloat);
        mb.node("Mul", {"mask", "a"}, {"kept"}, "keep");
        mb.node("Greater", {"kept", "b"}, {"greater"}, "greater");
        mb.node("Where", {"greater", "kept", "b"}, {"chosen"}, "where");
        mb.node("Clip", {"chosen", "lo", "hi"}, {"y"}, "clip");
        test::AgreementOptions options;
        options.precision = precision;
        options.forcedTactics = {{"clip", tactic + toString(precision)}};
        const auto agreement = test::expectBackendsAgree(
            mb.bytes(), {{"a", test::randomFloats(dims, 83)}, {"b", test::randomFloats({dims.back()}, 84)}}, options);
        expectFusedOnGpu(agreement);
        test::expectNoFailedTactics(agreement);
      }
}

TEST(PointwiseAgreement, IntegerChainIsExact) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb;
  mb.input("a", kInt32, {3, 11}).input("b", kInt32, {11}).output("y");
  mb.initializer("seven", HostTensor::scalar<int32_t>(7));
  mb.node("Mul", {"a", "b"}, {"product"}, "mul");
  mb.node("Add", {"product", "seven"}, {"sum"}, "add");
  mb.node("Abs", {"sum"}, {"y"}, "abs");
  std::vector<int32_t> a(33), b(11);
  for (size_t i = 0; i < a.size(); ++i) a[i] = int32_t(i * 37 % 23) - 11;
  for (size_t i = 0; i < b.size(); ++i) b[i] = int32_t(i * 5 % 9) - 4;
  const auto agreement = test::expectBackendsAgree(
      mb.bytes(), {{"a", HostTensor::fromVector<int32_t>({3, 11}, a)}, {"b", HostTensor::fromVector<int32_t>({11}, b)}});
  expectFusedOnGpu(agreement);
}

// Fourteen ops in one tree: the first branch's result stays live while the others run, and the
// intermediates consumed by then reuse each other's workspace.
TEST(PointwiseAgreement, LongChainSharesWorkspace) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1, 3, 7, 5}, {2, 257}})
    for (Precision precision : kPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb;
      mb.input("x", kFloat, dims).output("y");
      mb.initializer("k", HostTensor::scalar<float>(1.25f));
      mb.node("Sigmoid", {"x"}, {"s"}, "sigmoid");
      mb.node("Mul", {"s", "k"}, {"s2"}, "scale");
      mb.node("Exp", {"s2"}, {"e"}, "exp");
      mb.node("Neg", {"e"}, {"n"}, "neg");
      mb.node("Abs", {"x"}, {"ax"}, "abs");
      mb.node("Add", {"ax", "k"}, {"ax1"}, "add_k");
      mb.node("Log", {"ax1"}, {"l"}, "log");
      mb.node("Add", {"n", "l"}, {"nl"}, "add");
      mb.node("Relu", {"nl"}, {"r"}, "relu");
      mb.node("Abs", {"x"}, {"ax2"}, "abs_again");
      mb.node("Add", {"ax2", "k"}, {"ax3"}, "add_k_again");
      mb.node("Sqrt", {"ax3"}, {"sq"}, "sqrt");
      mb.node("Div", {"r", "sq"}, {"d"}, "div");
      mb.node("Sub", {"d", "k"}, {"y"}, "sub");
      const auto agreement =
          test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 85, -2.0f, 2.0f)}}, precision);
      expectFusedOnGpu(agreement);
    }
}

}  // namespace
