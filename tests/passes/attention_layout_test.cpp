// The attention layout passes on whole blocks as exporters write them: the
// strided views they follow, BERT-style heads after a merged QKV product
// (PackAttentionInputs), and nn.MultiheadAttention's sequence-first export
// (FoldAttentionOutputLayout, then the packing).
#include "common/attention_models.h"
#include "pass_test_util.h"
#include "passes/strided_views.h"

using namespace kiln;
using namespace kiln::test;
using passes::StridedView;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;
constexpr int64_t kBatch = 2, kLength = 5, kHeads = 3, kDepth = 4;

}  // namespace

TEST(StridedViews, ReshapeKeepsPiecesThatDoNotNest) {
  // [L, B, E] seen through a Transpose of a dense [B, L, E]: folding heads into
  // the batch
  // ([L, B*H, D]) merges dims whose strides do not nest, and a later Transpose
  // and Reshape to [B, H, L, D] still give one stride a dim.
  const StridedView base = StridedView::permuted({2, 5, 12}, {1, 0, 2});
  ModelBuilder mb;
  mb.input("a", F, {5, 2, 12});
  setInts(mb, "fold", {5, 6, 4});
  setInts(mb, "heads", {2, 3, 5, 4});
  mb.node("Reshape", {"a", "fold"}, {"b"}, "fold");
  ModelBuilder::setInts(mb.node("Transpose", {"b"}, {"c"}, "move"), "perm", {1, 0, 2});
  mb.node("Reshape", {"c", "heads"}, {"d"}, "heads");
  mb.output("d");
  auto net = importModel(mb);
  passes::GraphIndex index(*net);
  const passes::ViewChain chain = passes::viewChainTo(index, "d");
  EXPECT_EQ(chain.base, "a");
  ASSERT_EQ(chain.steps.size(), 3u);
  const auto folded = passes::viewThrough(*net, index.layer(chain.steps[0].layer), base);
  ASSERT_TRUE(folded);
  EXPECT_FALSE(folded->strides()) << "B and H merged: no single stride";
  const auto view = passes::viewAlong(*net, index, chain, base);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->sizes(), (std::vector<int64_t>{2, 3, 5, 4}));
  EXPECT_EQ(*view->strides(), (std::vector<int64_t>{60, 4, 12, 1}));
  EXPECT_EQ(view->offset, 0);
}

TEST(StridedViews, SplitAndGatherMoveTheOffset) {
  ModelBuilder mb;
  mb.input("a", F, {2, 5, 12});
  setInts(mb, "sizes", {4, 4, 4});
  mb.initializer("at", HostTensor::scalar<int64_t>(1));
  ModelBuilder::setInt(mb.node("Split", {"a", "sizes"}, {"s0", "s1", "s2"}, "split"), "axis", -1);
  ModelBuilder::setInt(mb.node("Gather", {"s2", "at"}, {"g"}, "gather"), "axis", 1);
  mb.output("g");
  auto net = importModel(mb);
  passes::GraphIndex index(*net);
  const auto view = passes::viewAlong(*net, index, passes::viewChainTo(index, "g"), StridedView::dense({2, 5, 12}));
  ASSERT_TRUE(view);
  EXPECT_EQ(view->sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(*view->strides(), (std::vector<int64_t>{60, 1}));
  EXPECT_EQ(view->offset, 8 + 12);
}

TEST(PackAttentionInputs, BertHeadsReadTheMergedProductInPlace) {
  // Batch 1 and one head too: dims of one element have no stride to match.
  for (const AttentionBlockDims& dims :
       {AttentionBlockDims{}, AttentionBlockDims{1, 7, 2, 4}, AttentionBlockDims{3, 1, 1, 8}}) {
    SCOPED_TRACE("B" + std::to_string(dims.batch) + " L" + std::to_string(dims.length) + " H" +
                 std::to_string(dims.heads));
    auto run = optimize(bertSelfAttention(dims), PassManager::standard(3));
    EXPECT_EQ(opCounts(*run.optimized),
              (std::map<std::string, int>{{"kiln.FusedMatMul", 1}, {"kiln.Attention", 1}, {"Reshape", 2}}));
    const Layer& attention = onlyLayer(*run.optimized, "kiln.Attention");
    EXPECT_EQ(attention.attrInt("qkv_packed", 0), 1);
    EXPECT_EQ(attention.inputs[0], attention.inputs[1]);
    EXPECT_EQ(attention.inputs[0], attention.inputs[2]);
    EXPECT_EQ(run.optimized->tensor(attention.inputs[0]).shape.knownDims(),
              (std::vector<int64_t>{dims.batch, dims.length, 3, dims.heads, dims.depth}));
    expectSameOutputs(run);
  }
}

TEST(PackAttentionInputs, ChainsReadElsewhereKeepTheirLayersButStillPack) {
  ModelBuilder mb = bertSelfAttention();
  mb.output("k");  // the moved K is a graph output too
  auto run = optimize(mb, PassManager::standard(3));
  const Layer& attention = onlyLayer(*run.optimized, "kiln.Attention");
  EXPECT_EQ(attention.attrInt("qkv_packed", 0), 1);
  EXPECT_EQ(countOf(*run.optimized, "Split"), 1) << "K's slice is still needed for the output";
  expectSameOutputs(run);
}

TEST(PackAttentionInputs, SeparateProjectionsAreNotPacked) {
  // Heads from three different activations: no one tensor holds them side by
  // side.
  ModelBuilder mb;
  setScalar(mb, "scale", 0.5f);
  for (const char* name : {"q", "k", "v"}) mb.input(name, F, {kBatch, kHeads, kLength, kDepth});
  addScaledDotProductAttention(mb, "q", "k", "v", "y");
  mb.output("y");
  auto run = optimize(mb, PassManager::standard(3));
  EXPECT_EQ(onlyLayer(*run.optimized, "kiln.Attention").attrInt("qkv_packed", 0), 0);
  expectSameOutputs(run);
}

TEST(AttentionLayout, MultiheadAttentionExportLosesItsCopies) {
  for (const AttentionBlockDims& dims : {AttentionBlockDims{}, AttentionBlockDims{1, 5, 3, 4}}) {
    SCOPED_TRACE("batch " + std::to_string(dims.batch));
    auto run = optimize(multiheadAttentionExport(dims), PassManager::standard(3));
    const auto counts = opCounts(*run.optimized);
    EXPECT_EQ(counts.count("Transpose"), 0u) << "every Transpose folded";
    EXPECT_EQ(counts.count("Gather"), 0u);
    EXPECT_EQ(counts.count("Split"), 0u);
    EXPECT_EQ(countOf(*run.optimized, "kiln.FusedMatMul"), 2) << "in-projection, and out-projection with its residual";
    const Layer& attention = onlyLayer(*run.optimized, "kiln.Attention");
    EXPECT_EQ(attention.attrInt("qkv_packed", 0), 1);
    EXPECT_EQ(attention.attrInt("out_interleaved", 0), 1);
    EXPECT_EQ(run.optimized->tensor(attention.inputs[0]).shape.knownDims(),
              (std::vector<int64_t>{dims.batch, dims.length, 3, dims.heads, dims.depth}));
    bool residualFused = false;
    for (const Layer& layer : run.optimized->layers())
      residualFused |= layer.opType == "FusedMatMul" && layer.hasInput(3) && layer.inputs[3] == "x";
    EXPECT_TRUE(residualFused);
    expectSameOutputs(run);
  }
}

TEST(AttentionLayout, OutputReadElsewhereKeepsTheExportsLayout) {
  ModelBuilder mb = multiheadAttentionExport();
  mb.output("o_seq");
  auto run = optimize(mb, PassManager::standard(3));
  EXPECT_EQ(onlyLayer(*run.optimized, "kiln.Attention").attrInt("out_interleaved", 0), 0);
  expectSameOutputs(run);
}
