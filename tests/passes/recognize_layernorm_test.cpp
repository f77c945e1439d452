#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

struct LayerNormForm {
  int64_t opset;
  bool reciprocal;   // d * Reciprocal(sqrt) instead of d / sqrt
  bool squareByMul;  // d * d instead of Pow(d, 2)
  bool affine;       // * gamma + beta
};

// The decomposition exporters emit for LayerNorm over the last axis of x [2, 3, 8].
ModelBuilder decomposedLayerNorm(const LayerNormForm& form) {
  ModelBuilder mb(form.opset);
  mb.input("x", F, {2, 3, 8});
  setScalar(mb, "eps", 1e-5f);
  setScalar(mb, "two", 2.0f);
  setInts(mb, "axes", {-1});
  mb.initializer("gamma", randomFloats({8}, 5));
  mb.initializer("beta", randomFloats({8}, 6));
  auto reduce = [&](const std::string& in, const std::string& out, const std::string& name) {
    if (form.opset >= 18) {
      mb.node("ReduceMean", {in, "axes"}, {out}, name);
    } else {
      ModelBuilder::setInts(mb.node("ReduceMean", {in}, {out}, name), "axes", {-1});
    }
  };
  reduce("x", "mean", "rm1");
  mb.node("Sub", {"x", "mean"}, {"d"}, "sub");
  if (form.squareByMul) mb.node("Mul", {"d", "d"}, {"sq"}, "square");
  else mb.node("Pow", {"d", "two"}, {"sq"}, "square");
  reduce("sq", "var", "rm2");
  mb.node("Add", {"var", "eps"}, {"ve"}, "add_eps");
  mb.node("Sqrt", {"ve"}, {"std"}, "sqrt");
  std::string normalized = form.affine ? "n" : "y";
  if (form.reciprocal) {
    mb.node("Reciprocal", {"std"}, {"inv"}, "recip");
    mb.node("Mul", {"d", "inv"}, {normalized}, "normalize");
  } else {
    mb.node("Div", {"d", "std"}, {normalized}, "normalize");
  }
  if (form.affine) {
    mb.node("Mul", {"n", "gamma"}, {"g"}, "mul_gamma");
    mb.node("Add", {"g", "beta"}, {"y"}, "add_beta");
  }
  mb.output("y");
  return mb;
}

}  // namespace

class LayerNormForms : public ::testing::TestWithParam<LayerNormForm> {};

TEST_P(LayerNormForms, BecomesLayerNormalization) {
  auto run = optimize(decomposedLayerNorm(GetParam()), createRecognizeLayerNormPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"LayerNormalization", 1}}));
  const Layer& norm = onlyLayer(*run.optimized, "LayerNormalization");
  EXPECT_EQ(norm.attrInt("axis"), -1);
  EXPECT_NEAR(norm.attrFloat("epsilon"), 1e-5f, 1e-9f);
  EXPECT_EQ(norm.opsetVersion, 17);
  EXPECT_EQ(norm.origins.size(), run.original->layers().size());
  expectSameOutputs(run);
}

INSTANTIATE_TEST_SUITE_P(Exporters, LayerNormForms,
                         ::testing::Values(LayerNormForm{17, false, false, true}, LayerNormForm{18, false, false, true},
                                           LayerNormForm{17, true, true, true}, LayerNormForm{17, false, true, false},
                                           LayerNormForm{18, true, false, false}));

TEST(RecognizeLayerNorm, IntermediateNeededElsewhereBlocksIt) {
  ModelBuilder mb = decomposedLayerNorm({17, false, false, true});
  mb.output("var");  // the variance is also a model output
  auto run = optimize(mb, createRecognizeLayerNormPass());
  EXPECT_EQ(countOf(*run.optimized, "LayerNormalization"), 0);
  EXPECT_EQ(run.optimized->layers().size(), run.original->layers().size());
}
