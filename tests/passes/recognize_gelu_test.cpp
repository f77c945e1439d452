#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

enum class Tail { kXTimesAThenHalf, kXTimesHalfA, kHalfXTimesA };

// "a" = 1 + Erf/Tanh(...) to the output y, in one of the orders exporters use.
void addTail(ModelBuilder& mb, Tail tail) {
  setScalar(mb, "half", 0.5f);
  switch (tail) {
    case Tail::kXTimesAThenHalf:
      mb.node("Mul", {"x", "a"}, {"p"}, "mul_x");
      mb.node("Mul", {"p", "half"}, {"y"}, "mul_half");
      break;
    case Tail::kXTimesHalfA:
      mb.node("Mul", {"a", "half"}, {"h"}, "mul_half");
      mb.node("Mul", {"x", "h"}, {"y"}, "mul_x");
      break;
    case Tail::kHalfXTimesA:
      mb.node("Mul", {"half", "x"}, {"h"}, "mul_half");
      mb.node("Mul", {"h", "a"}, {"y"}, "mul_x");
      break;
  }
}

ModelBuilder erfGelu(Tail tail, bool divide = true) {
  ModelBuilder mb(20);
  mb.input("x", F, {3, 16});
  setScalar(mb, "one", 1.0f);
  if (divide) {
    setScalar(mb, "sqrt2", 1.4142135f);
    mb.node("Div", {"x", "sqrt2"}, {"s"}, "div");
  } else {
    setScalar(mb, "inv_sqrt2", 0.70710678f);
    mb.node("Mul", {"inv_sqrt2", "x"}, {"s"}, "scale");
  }
  mb.node("Erf", {"s"}, {"e"}, "erf");
  mb.node("Add", {"e", "one"}, {"a"}, "add_one");
  addTail(mb, tail);
  mb.output("y");
  return mb;
}

ModelBuilder tanhGelu(bool powCube) {
  ModelBuilder mb(20);
  mb.input("x", F, {3, 16});
  setScalar(mb, "one", 1.0f);
  setScalar(mb, "three", 3.0f);
  setScalar(mb, "c", 0.044715f);
  setScalar(mb, "k", 0.7978845608f);
  if (powCube) {
    mb.node("Pow", {"x", "three"}, {"cube"}, "cube");
  } else {
    mb.node("Mul", {"x", "x"}, {"sq"}, "square");
    mb.node("Mul", {"sq", "x"}, {"cube"}, "cube");
  }
  mb.node("Mul", {"c", "cube"}, {"cc"}, "mul_c");
  mb.node("Add", {"x", "cc"}, {"inner"}, "add_inner");
  mb.node("Mul", {"inner", "k"}, {"t_in"}, "mul_k");
  mb.node("Tanh", {"t_in"}, {"t"}, "tanh");
  mb.node("Add", {"one", "t"}, {"a"}, "add_one");
  addTail(mb, Tail::kXTimesAThenHalf);
  mb.output("y");
  return mb;
}

void expectOneGelu(const ModelBuilder& mb, const std::string& approximate) {
  auto run = optimize(mb, createRecognizeGeluPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Gelu", 1}}));
  const Layer& gelu = onlyLayer(*run.optimized, "Gelu");
  EXPECT_EQ(gelu.attrString("approximate"), approximate);
  EXPECT_EQ(gelu.origins.size(), run.original->layers().size());
  EXPECT_EQ(gelu.inputs, std::vector<std::string>{"x"});
  expectSameOutputs(run);
}

}  // namespace

TEST(RecognizeGelu, ErfFormsInEveryProductOrder) {
  expectOneGelu(erfGelu(Tail::kXTimesAThenHalf), "none");
  expectOneGelu(erfGelu(Tail::kXTimesHalfA), "none");
  expectOneGelu(erfGelu(Tail::kHalfXTimesA, false), "none");
}

TEST(RecognizeGelu, TanhForms) {
  expectOneGelu(tanhGelu(true), "tanh");
  expectOneGelu(tanhGelu(false), "tanh");
}

TEST(RecognizeGelu, WrongConstantOrSharedIntermediateBlocksIt) {
  ModelBuilder wrong(20);
  wrong.input("x", F, {4});
  setScalar(wrong, "one", 1.0f);
  setScalar(wrong, "sqrt3", 1.7320508f);
  wrong.node("Div", {"x", "sqrt3"}, {"s"}, "div");
  wrong.node("Erf", {"s"}, {"e"}, "erf");
  wrong.node("Add", {"e", "one"}, {"a"}, "add_one");
  addTail(wrong, Tail::kXTimesAThenHalf);
  wrong.output("y");
  EXPECT_EQ(countOf(*optimize(wrong, createRecognizeGeluPass()).optimized, "Gelu"), 0);

  ModelBuilder shared = erfGelu(Tail::kXTimesAThenHalf);
  shared.output("e");
  EXPECT_EQ(countOf(*optimize(shared, createRecognizeGeluPass()).optimized, "Gelu"), 0);
}
