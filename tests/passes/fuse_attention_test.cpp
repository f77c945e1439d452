#include "pass_test_util.h"

#include <cmath>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

struct AttentionForm {
  bool transposeK;  // K given as [B,H,L,D] and transposed in the graph
  bool divide;      // scores / sqrt(D) instead of * 1/sqrt(D)
  bool mask;
};

// Q, K, V [2, 3, 5, 8] (batch, heads, length, head dim).
ModelBuilder attentionModel(const AttentionForm& form, int64_t softmaxAxis = -1) {
  ModelBuilder mb;
  mb.input("q", F, {2, 3, 5, 8});
  mb.input("k", F, form.transposeK ? std::vector<int64_t>{2, 3, 5, 8} : std::vector<int64_t>{2, 3, 8, 5});
  mb.input("v", F, {2, 3, 5, 8});
  if (form.mask) mb.input("mask", F, {2, 1, 1, 5});
  std::string kt = "k";
  if (form.transposeK) {
    ModelBuilder::setInts(mb.node("Transpose", {"k"}, {"kt"}, "k_transpose"), "perm", {0, 1, 3, 2});
    kt = "kt";
  }
  mb.node("MatMul", {"q", kt}, {"scores"}, "qk");
  if (form.divide) {
    setScalar(mb, "d", std::sqrt(8.0f));
    mb.node("Div", {"scores", "d"}, {"scaled"}, "scale");
  } else {
    setScalar(mb, "d", 1.0f / std::sqrt(8.0f));
    mb.node("Mul", {"d", "scores"}, {"scaled"}, "scale");
  }
  std::string logits = "scaled";
  if (form.mask) {
    mb.node("Add", {"scaled", "mask"}, {"masked"}, "add_mask");
    logits = "masked";
  }
  ModelBuilder::setInt(mb.node("Softmax", {logits}, {"p"}, "softmax"), "axis", softmaxAxis);
  mb.node("MatMul", {"p", "v"}, {"y"}, "pv");
  mb.output("y");
  return mb;
}

}  // namespace

class AttentionForms : public ::testing::TestWithParam<AttentionForm> {};

TEST_P(AttentionForms, BecomesOneAttentionLayer) {
  const AttentionForm form = GetParam();
  auto run = optimize(attentionModel(form), createFuseAttentionPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.Attention", 1}}));
  const Layer& attention = onlyLayer(*run.optimized, "kiln.Attention");
  EXPECT_NEAR(attention.attrFloat("scale"), 1.0f / std::sqrt(8.0f), 1e-6f);
  EXPECT_EQ(attention.attrInt("has_mask"), form.mask ? 1 : 0);
  EXPECT_EQ(attention.attrInt("k_transposed"), form.transposeK ? 0 : 1);
  EXPECT_EQ(attention.inputs[1], "k");
  EXPECT_EQ(attention.origins.size(), run.original->layers().size());
  expectSameOutputs(run);
}

INSTANTIATE_TEST_SUITE_P(Exporters, AttentionForms,
                         ::testing::Values(AttentionForm{true, true, true}, AttentionForm{false, false, false},
                                           AttentionForm{true, false, false}, AttentionForm{false, true, true}));

// A constant additive mask of zeros (Hugging Face's export without an attention_mask input folds to
// one) masks nothing: the layer reads none. A constant mask with a -inf reads as before.
TEST(FuseAttention, ConstantZeroMaskIsDropped) {
  for (bool zeros : {true, false}) {
    SCOPED_TRACE(zeros ? "zeros" : "one key masked");
    ModelBuilder mb;
    mb.input("q", F, {2, 3, 5, 8}).input("k", F, {2, 3, 8, 5}).input("v", F, {2, 3, 5, 8});
    std::vector<float> mask(5 * 5, 0.0f);
    if (!zeros) mask[7] = -INFINITY;
    mb.initializer("mask", HostTensor::fromVector<float>({1, 1, 5, 5}, mask));
    mb.node("MatMul", {"q", "k"}, {"scores"}, "qk");
    setScalar(mb, "d", std::sqrt(8.0f));
    mb.node("Div", {"scores", "d"}, {"scaled"}, "scale");
    mb.node("Add", {"scaled", "mask"}, {"masked"}, "add_mask");
    ModelBuilder::setInt(mb.node("Softmax", {"masked"}, {"p"}, "softmax"), "axis", -1);
    mb.node("MatMul", {"p", "v"}, {"y"}, "pv");
    mb.output("y");
    auto run = optimize(mb, createFuseAttentionPass());
    const Layer& attention = onlyLayer(*run.optimized, "kiln.Attention");
    EXPECT_EQ(attention.attrInt("has_mask"), zeros ? 0 : 1);
    EXPECT_EQ(attention.inputs.size(), zeros ? 3u : 4u);
    expectSameOutputs(run);
  }
}

// torch.onnx's scaled_dot_product_attention: Q and Kᵀ each times √(1/√D), then the product and a mask,
// and the probabilities of rows masked entirely zeroed by Where(IsNaN(p), 0, p).
TEST(FuseAttention, PyTorchSdpaExportScalesBothOperands) {
  ModelBuilder mb;
  mb.input("q", F, {2, 3, 5, 8}).input("k", F, {2, 3, 5, 8}).input("v", F, {2, 3, 5, 8}).input("mask", F, {2, 1, 1, 5});
  const float half = std::sqrt(1.0f / std::sqrt(8.0f));
  setScalar(mb, "sq", half);
  setScalar(mb, "sk", half);
  ModelBuilder::setInts(mb.node("Transpose", {"k"}, {"kt"}, "k_transpose"), "perm", {0, 1, 3, 2});
  mb.node("Mul", {"q", "sq"}, {"qs"}, "q_scale");
  mb.node("Mul", {"kt", "sk"}, {"kts"}, "k_scale");
  mb.node("MatMul", {"qs", "kts"}, {"scores"}, "qk");
  mb.node("Add", {"scores", "mask"}, {"masked"}, "add_mask");
  ModelBuilder::setInt(mb.node("Softmax", {"masked"}, {"p"}, "softmax"), "axis", -1);
  mb.node("IsNaN", {"p"}, {"p_nan"}, "nan");
  setScalar(mb, "zero", 0.0f);
  mb.node("Where", {"p_nan", "zero", "p"}, {"p_guarded"}, "guard");
  mb.node("MatMul", {"p_guarded", "v"}, {"y"}, "pv");
  mb.output("y");
  auto run = optimize(mb, createFuseAttentionPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.Attention", 1}}));
  const Layer& attention = onlyLayer(*run.optimized, "kiln.Attention");
  EXPECT_NEAR(attention.attrFloat("scale"), 1.0f / std::sqrt(8.0f), 1e-6f);
  EXPECT_EQ(attention.attrInt("k_transposed"), 0);
  EXPECT_EQ(attention.inputs[0], "q");
  EXPECT_EQ(attention.inputs[1], "k");
  expectSameOutputs(run);
}

// Heads as exporters lay them out: Q, K, V made [B, L, H, D] and transposed to [B, H, L, D] (K to
// [B, H, D, L] in one Transpose, or by two), the output transposed back. The Transposes go into
// the layer as *_interleaved attributes; a Transpose something else reads stays.
ModelBuilder interleavedAttention(bool kByTwoTransposes, bool qTransposeReadElsewhere) {
  ModelBuilder mb;
  mb.input("q", F, {2, 5, 3, 8}).input("k", F, {2, 5, 3, 8}).input("v", F, {2, 5, 3, 8});
  ModelBuilder::setInts(mb.node("Transpose", {"q"}, {"qh"}, "q_heads"), "perm", {0, 2, 1, 3});
  ModelBuilder::setInts(mb.node("Transpose", {"v"}, {"vh"}, "v_heads"), "perm", {0, 2, 1, 3});
  if (kByTwoTransposes) {
    ModelBuilder::setInts(mb.node("Transpose", {"k"}, {"kh"}, "k_heads"), "perm", {0, 2, 1, 3});
    ModelBuilder::setInts(mb.node("Transpose", {"kh"}, {"kt"}, "k_transpose"), "perm", {0, 1, 3, 2});
  } else {
    ModelBuilder::setInts(mb.node("Transpose", {"k"}, {"kt"}, "k_heads_transposed"), "perm", {0, 2, 3, 1});
  }
  mb.node("MatMul", {"qh", "kt"}, {"scores"}, "qk");
  setScalar(mb, "d", std::sqrt(8.0f));
  mb.node("Div", {"scores", "d"}, {"scaled"}, "scale");
  ModelBuilder::setInt(mb.node("Softmax", {"scaled"}, {"p"}, "softmax"), "axis", -1);
  mb.node("MatMul", {"p", "vh"}, {"yh"}, "pv");
  ModelBuilder::setInts(mb.node("Transpose", {"yh"}, {"y"}, "y_interleave"), "perm", {0, 2, 1, 3});
  mb.output("y");
  if (qTransposeReadElsewhere) mb.output("qh");
  return mb;
}

TEST(FuseAttention, InterleavedHeadsAreReadInPlace) {
  for (bool kByTwo : {false, true}) {
    SCOPED_TRACE(kByTwo ? "K by two Transposes" : "K in one Transpose");
    auto run = optimize(interleavedAttention(kByTwo, false), createFuseAttentionPass());
    EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.Attention", 1}}));
    const Layer& attention = onlyLayer(*run.optimized, "kiln.Attention");
    EXPECT_EQ(attention.inputs, (std::vector<std::string>{"q", "k", "v"}));
    EXPECT_EQ(attention.outputs, std::vector<std::string>{"y"});
    EXPECT_EQ(attention.name, "pv");
    EXPECT_EQ(attention.attrInt("k_transposed"), 0);
    for (const char* attribute : {"q_interleaved", "k_interleaved", "v_interleaved", "out_interleaved"})
      EXPECT_EQ(attention.attrInt(attribute, 0), 1) << attribute;
    EXPECT_EQ(run.optimized->tensor("y").shape.toString(), "[2,5,3,8]");
    expectSameOutputs(run);
  }
}

TEST(FuseAttention, InterleavingTransposeReadElsewhereStays) {
  auto run = optimize(interleavedAttention(false, true), createFuseAttentionPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.Attention", 1}, {"Transpose", 1}}));
  const Layer& attention = onlyLayer(*run.optimized, "kiln.Attention");
  EXPECT_EQ(attention.inputs[0], "qh");
  EXPECT_EQ(attention.attrInt("q_interleaved", 0), 0);
  EXPECT_EQ(attention.attrInt("k_interleaved", 0), 1);
  expectSameOutputs(run);
}

TEST(FuseAttention, SoftmaxOverAnotherAxisIsNotAttention) {
  auto run = optimize(attentionModel({true, true, true}, 2), createFuseAttentionPass());
  EXPECT_EQ(countOf(*run.optimized, "kiln.Attention"), 0);
}

TEST(FuseAttention, ProbabilitiesReadElsewhereBlockIt) {
  ModelBuilder mb = attentionModel({true, true, false});
  mb.output("p");
  auto run = optimize(mb, createFuseAttentionPass());
  EXPECT_EQ(countOf(*run.optimized, "kiln.Attention"), 0);
}

TEST(AttentionKernel, MismatchedHeadDimsNameTheLayer) {
  auto net = importModel(attentionModel({false, false, false}));
  PassContext context;
  createFuseAttentionPass()->run(*net, context);
  ASSERT_EQ(countOf(*net, "kiln.Attention"), 1);
  ValueMap inputs = randomInputs(*net, 1);
  inputs["k"] = randomFloats({2, 3, 8, 5}, 2);
  inputs["q"] = randomFloats({2, 3, 5, 8}, 3);
  net->layers()[0].attributes["k_transposed"] = int64_t(0);  // K is now read as [5, 8] per head: D mismatch
  try {
    ReferenceExecutor(net).run(inputs);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Attention"), std::string::npos) << e.what();
  }
}
