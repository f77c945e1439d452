// CPU and CUDA engines agree on Einsum: transposes, sums, inner and batched products, diagonals
// under an ellipsis, three operands and broadcasting, at odd sizes and batch 1, in fp32, fp16 and
// float64.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

struct EinsumCase {
  std::string equation;
  std::vector<std::vector<int64_t>> dims;
};

const std::vector<EinsumCase> kCases{
    {"ij->ji", {{3, 4}}},
    {"ij->i", {{3, 4}}},
    {"i,i", {{5}, {5}}},
    {"bij, bjk -> bik", {{5, 2, 3}, {5, 3, 4}}},
    {"bij,bjk->bik", {{1, 7, 9}, {1, 9, 5}}},
    {"...ii ->...i", {{3, 5, 5}}},
    {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
    {"bhqd,bhkd->bhqk", {{1, 3, 5, 7}, {1, 3, 9, 7}}},
    {"ij,j->ij", {{3, 4}, {4}}},
};

HostTensor randomDoubles(const std::vector<int64_t>& dims, uint32_t seed) {
  const HostTensor f = test::randomFloats(dims, seed);
  const auto values = f.toDoubleVector();
  return HostTensor::fromVector<double>(dims, values);
}

TEST(EinsumAgreement, FloatEquations) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const EinsumCase& c : kCases)
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(c.equation + " " + toString(precision));
      ModelBuilder mb(12);
      std::map<std::string, HostTensor> inputs;
      std::vector<std::string> names;
      for (size_t i = 0; i < c.dims.size(); ++i) {
        names.push_back("x" + std::to_string(i));
        mb.input(names.back(), kFloat, c.dims[i]);
        inputs.emplace(names.back(), test::randomFloats(c.dims[i], uint32_t(71 + i)));
      }
      mb.output("y");
      ModelBuilder::setString(mb.node("Einsum", names, {"y"}, "einsum"), "equation", c.equation);
      test::expectBackendsAgree(mb.bytes(), inputs, precision);
    }
}

// The node tests' Einsums are float64.
TEST(EinsumAgreement, DoubleEquations) {
  KILN_REQUIRE_CUDA_BACKEND();
  constexpr int32_t kDouble = 11;
  for (const EinsumCase& c : kCases) {
    SCOPED_TRACE(c.equation);
    ModelBuilder mb(12);
    std::map<std::string, HostTensor> inputs;
    std::vector<std::string> names;
    for (size_t i = 0; i < c.dims.size(); ++i) {
      names.push_back("x" + std::to_string(i));
      mb.input(names.back(), kDouble, c.dims[i]);
      inputs.emplace(names.back(), randomDoubles(c.dims[i], uint32_t(75 + i)));
    }
    mb.output("y");
    ModelBuilder::setString(mb.node("Einsum", names, {"y"}, "einsum"), "equation", c.equation);
    test::expectBackendsAgree(mb.bytes(), inputs, Precision::kFP32);
  }
}

// Thirteen summed labels (over two operands of rank 7 and 6) are more than the kernel takes: the
// builder keeps the layer on the CPU.
TEST(EinsumAgreement, EquationsWithTooManyLabelsRunOnTheCpu) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<int64_t> a(7, 2), b(6, 2);
  ModelBuilder mb(12);
  mb.input("a", kFloat, a).input("b", kFloat, b).output("y");
  ModelBuilder::setString(mb.node("Einsum", {"a", "b"}, {"y"}, "einsum"), "equation", "abcdefg,hijklm->");
  const auto agreement =
      test::expectBackendsAgree(mb.bytes(), {{"a", test::randomFloats(a, 79)}, {"b", test::randomFloats(b, 80)}},
                                Precision::kFP32, /*requireEveryLayerOnGpu=*/false);
  EXPECT_FALSE(agreement.everyLayerOnGpu);
}

}  // namespace
