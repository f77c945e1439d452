// The tensor-parallel split on BERT- and GPT-2-shaped graphs (tests/common/transformer_models.h):
// which products are cut by columns and rows, the rank's weights, reshape targets and split sizes,
// one AllReduce a block with the row product's bias on rank 0 only; and the refusals, each one
// message naming the block and why. That the ranks together compute the model is
// tests/builder/tensor_parallel_build_test.cpp.
#include "common/transformer_models.h"
#include "passes/graph_utils.h"
#include "passes/pass_test_util.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace kiln;
using namespace kiln::test;

namespace {

std::shared_ptr<Network> splitFor(const ModelBuilder& mb, int worldSize, int rank) {
  auto network = importModel(mb);
  network->inferShapes();
  PassContext context;
  PassManager::tensorParallelSplit(worldSize, rank).run(*network, context);
  return network;
}

const Layer& layerNamed(const Network& network, const std::string& name) {
  for (const Layer& l : network.layers())
    if (l.name == name) return l;
  throw std::runtime_error("no layer '" + name + "'");
}

const HostTensor& weightsOf(const Network& network, const std::string& layer, size_t input = 1) {
  const HostTensor* value = passes::constantValue(network, layerNamed(network, layer).inputs[input]);
  if (!value) throw std::runtime_error("input " + std::to_string(input) + " of '" + layer + "' is not a constant");
  return *value;
}

std::vector<int64_t> intsOf(const Network& network, const std::string& layer, size_t input) {
  return *passes::constantInts(network, layerNamed(network, layer).inputs[input]);
}

float at(const HostTensor& t, int64_t row, int64_t column) { return t.data<float>()[row * t.dim(1) + column]; }

// Expects `call` to throw kiln::Error with `code` and every fragment in its message.
template <class Call>
void expectRefusal(Call call, ErrorCode code, const std::vector<std::string>& fragments) {
  try {
    call();
    ADD_FAILURE() << "the split did not refuse";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(TensorParallelSplit, BertSplitsEveryBlockAndKeepsTheRestWhole) {
  const TransformerDims d;  // 4 heads of 16, MLP 256, 2 layers
  const auto whole = importModel(bertLikeModel(d));
  for (int rank : {0, 1}) {
    const auto net = splitFor(bertLikeModel(d), 2, rank);
    EXPECT_EQ(countOf(*net, "kiln.AllReduce"), 4) << "one after each attention and MLP block";
    for (const Layer& l : net->layers())
      if (l.opType == "AllReduce") {
        EXPECT_EQ(l.attrInt("world_size"), 2);
        EXPECT_EQ(l.attrString("reduction"), "sum");
      }
    const std::string self = "/encoder/layer.0/attention/self/";
    EXPECT_EQ(weightsOf(*net, self + "query/MatMul").dims(), (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(weightsOf(*net, self + "value/MatMul").dims(), (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(weightsOf(*net, "/encoder/layer.0/attention/output/dense/MatMul").dims(), (std::vector<int64_t>{32, 64}));
    EXPECT_EQ(weightsOf(*net, "/encoder/layer.1/intermediate/dense/MatMul").dims(), (std::vector<int64_t>{64, 128}));
    EXPECT_EQ(weightsOf(*net, "/encoder/layer.1/output/dense/MatMul").dims(), (std::vector<int64_t>{128, 64}));
    // The rank's heads: columns 32 r ... 32 r + 31 of the query weights, its bias alike.
    const HostTensor& q = weightsOf(*net, self + "query/MatMul");
    const HostTensor& wholeQ = weightsOf(*whole, self + "query/MatMul");
    EXPECT_EQ(at(q, 5, 3), at(wholeQ, 5, 32 * rank + 3));
    EXPECT_EQ(weightsOf(*net, self + "query/Add", 0).dims(), (std::vector<int64_t>{32}));
    EXPECT_EQ(intsOf(*net, self + "query/Reshape", 1), (std::vector<int64_t>{1, 7, 2, 16}));
    EXPECT_EQ(intsOf(*net, "/encoder/layer.1/attention/self/query/Reshape", 1), (std::vector<int64_t>{1, 7, -1, 16}));
    EXPECT_EQ(intsOf(*net, self + "Reshape_3", 1), (std::vector<int64_t>{1, 7, 32}));
    // The row products' biases are added once, by rank 0 before the sum; embeddings and norms stay whole.
    const bool hasBias = std::any_of(net->layers().begin(), net->layers().end(),
                                     [](const Layer& l) { return l.name == "/encoder/layer.0/output/dense/Add"; });
    EXPECT_EQ(hasBias, rank == 0);
    EXPECT_EQ(countOf(*net, "LayerNormalization"), 5);
    EXPECT_EQ(weightsOf(*net, "/embeddings/word_embeddings/Gather", 0).dims(), (std::vector<int64_t>{11, 64}));
  }
}

TEST(TensorParallelSplit, Gpt2CutsThePackedQkvIntoEachRanksHeads) {
  const TransformerDims d;
  const auto whole = importModel(gpt2LikeModel(d));
  const std::string a = "/h.0/attn/";
  const HostTensor& wholeQkv = weightsOf(*whole, a + "c_attn/Gemm");
  for (int rank : {0, 1, 2, 3}) {
    const auto net = splitFor(gpt2LikeModel(d), 4, rank);
    EXPECT_EQ(countOf(*net, "kiln.AllReduce"), 4);
    // c_attn [64, 192] -> [64, 48]: 16 columns of each of Q, K and V.
    const HostTensor& qkv = weightsOf(*net, a + "c_attn/Gemm");
    ASSERT_EQ(qkv.dims(), (std::vector<int64_t>{64, 48}));
    for (int64_t part = 0; part < 3; ++part)
      EXPECT_EQ(at(qkv, 9, 16 * part + 1), at(wholeQkv, 9, 64 * part + 16 * rank + 1)) << "part " << part;
    EXPECT_EQ(weightsOf(*net, a + "c_attn/Gemm", 2).dims(), (std::vector<int64_t>{48}));
    EXPECT_EQ(intsOf(*net, a + "c_attn/Reshape_1", 1), (std::vector<int64_t>{1, 7, 48}));
    EXPECT_EQ(intsOf(*net, a + "Split", 1), (std::vector<int64_t>{16, 16, 16}));
    EXPECT_EQ(intsOf(*net, "/h.1/attn/q/Reshape", 1), (std::vector<int64_t>{1, 7, 1, 16}));
    EXPECT_EQ(intsOf(*net, "/h.1/attn/Reshape_3", 1), (std::vector<int64_t>{1, 7, 16}));
    // c_proj reads the rank's 16 rows; its bias (Gemm's C) is rank 0's alone.
    EXPECT_EQ(intsOf(*net, a + "c_proj/Reshape", 1), (std::vector<int64_t>{-1, 16}));
    EXPECT_EQ(weightsOf(*net, a + "c_proj/Gemm").dims(), (std::vector<int64_t>{16, 64}));
    EXPECT_EQ(layerNamed(*net, a + "c_proj/Gemm").hasInput(2), rank == 0);
    EXPECT_EQ(intsOf(*net, "/h.0/mlp/c_fc/Reshape_1", 1), (std::vector<int64_t>{1, 7, 64}));
    EXPECT_EQ(intsOf(*net, "/h.0/mlp/c_proj/Reshape", 1), (std::vector<int64_t>{-1, 64}));
  }
}

TEST(TensorParallelSplit, NotesEachBlockItSplits) {
  auto network = importModel(gpt2LikeModel({}));
  PassContext context;
  const auto records = PassManager::tensorParallelSplit(2, 1).run(*network, context);
  const PassRecord& split = records.back();
  EXPECT_EQ(split.name, "TensorParallelSplit");
  ASSERT_EQ(split.changes.size(), 4u);
  EXPECT_NE(split.changes[0].find("split the attention block around Softmax '/h.0/attn/Softmax': "
                                  "'/h.0/attn/c_attn/Gemm' by columns, '/h.0/attn/c_proj/Gemm' by rows + AllReduce "
                                  "(rank 1 of 2)"),
            std::string::npos)
      << split.changes[0];
  EXPECT_NE(split.changes[2].find("the MLP block '/h.0/mlp/c_fc/Gemm' -> '/h.0/mlp/c_proj/Gemm'"), std::string::npos)
      << split.changes[2];
}

TEST(TensorParallelSplit, RefusesHeadsThatTheRanksDoNotDivide) {
  TransformerDims d;
  d.heads = 6;
  d.depth = 8;
  expectRefusal([&] { splitFor(bertLikeModel(d), 4, 0); }, ErrorCode::kInvalidArgument,
                {"the attention block around Softmax '/encoder/layer.0/attention/self/Softmax' has 6 heads, which 4 "
                 "ranks do not divide"});
}

TEST(TensorParallelSplit, RefusesAnMlpWidthThatTheRanksDoNotDivide) {
  TransformerDims d;
  d.mlp = 250;
  expectRefusal([&] { splitFor(gpt2LikeModel(d), 4, 3); }, ErrorCode::kInvalidArgument,
                {"cannot split the MLP block '/h.0/mlp/c_fc/Gemm' -> '/h.0/mlp/c_proj/Gemm' over 4 ranks: they do not "
                 "divide the output width of '/h.0/mlp/c_fc/Gemm' (250)"});
}

TEST(TensorParallelSplit, RefusesAModelWithoutTransformerBlocks) {
  expectRefusal([&] { splitFor(convReluStack(2, 4, 6), 2, 0); }, ErrorCode::kUnsupported,
                {"found no transformer block to split over 2 ranks"});
  // Products without an activation between them are no MLP either.
  ModelBuilder mb;
  mb.input("x", onnx_types::kFloat, {3, 8})
      .initializer("w1", randomFloats({8, 16}, 1))
      .initializer("w2", randomFloats({16, 4}, 2));
  mb.node("MatMul", {"x", "w1"}, {"h"}, "first");
  mb.node("MatMul", {"h", "w2"}, {"y"}, "second");
  mb.output("y");
  expectRefusal([&] { splitFor(mb, 2, 0); }, ErrorCode::kUnsupported, {"found no transformer block"});
}

TEST(TensorParallelSplit, RefusesARankOutsideTheWorld) {
  expectRefusal([&] { splitFor(bertLikeModel({}), 2, 2); }, ErrorCode::kInvalidArgument,
                {"tensor-parallel rank 2 is not one of the 2 ranks"});
}

TEST(TensorParallelSplit, RefusesAttentionWhoseSplitTensorsLeaveTheBlock) {
  // The attention probabilities as a graph output (output_attentions) would hold one rank's heads.
  ModelBuilder mb = bertLikeModel({});
  mb.output("/encoder/layer.0/attention/self/Softmax_output_0");
  expectRefusal([&] { splitFor(mb, 2, 0); }, ErrorCode::kUnsupported,
                {"cannot split the attention block around Softmax '/encoder/layer.0/attention/self/Softmax' over 2 "
                 "ranks",
                 "a graph output"});
}

TEST(TensorParallelSplit, OneRankLeavesTheModelAlone) {
  const auto whole = importModel(bertLikeModel({}));
  const auto net = splitFor(bertLikeModel({}), 1, 0);
  EXPECT_EQ(countOf(*net, "kiln.AllReduce"), 0);
}

}  // namespace
