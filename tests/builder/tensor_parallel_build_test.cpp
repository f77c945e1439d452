// Tensor-parallel builds end to end on the CPU: BERT- and GPT-2-shaped models (random weights, 4
// heads of 16, MLP 256, 7 tokens) split over 2 and 4 ranks by BuilderConfig::tensorParallelSize /
// Rank, every rank's plan run on its own thread with the in-process communicator (runRanks), and
// every rank's output checked against the whole model's engine in fp32. Also: plans record their
// rank, ranks that do not belong together are refused naming the plan, and the lock-step timing.
#include <kiln/builder.h>
#include <kiln/compare.h>
#include <kiln/error.h>
#include <kiln/multi_rank.h>
#include <kiln/onnx_importer.h>

#include "common/transformer_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace kiln;
using namespace kiln::test;

namespace {

std::vector<uint8_t> buildPlan(const Network& network, int worldSize, int rank, int level = 3,
                               BuilderConfig config = {}) {
  config.tensorParallelSize = worldSize;
  config.tensorParallelRank = rank;
  config.optimizationLevel = level;
  for (const std::string& name : network.runtimeInputs()) {  // dynamic dims: 1 to 3
    const Shape& shape = network.tensor(name).shape;
    if (shape.isFullyKnown()) continue;
    std::vector<int64_t> smallest, largest;
    for (const Dim& dim : shape.dims()) {
      smallest.push_back(dim.isKnown() ? dim.value() : 1);
      largest.push_back(dim.isKnown() ? dim.value() : 3);
    }
    config.profiles.push_back({{{name, {smallest, largest, largest}}}});
  }
  return Builder().build(network, config).plan;
}

RankEngines rankEngines(const Network& network, int worldSize, int level = 3, const BuilderConfig& config = {}) {
  RankEngines engines;
  for (int rank = 0; rank < worldSize; ++rank)
    engines.push_back(Runtime().load(buildPlan(network, worldSize, rank, level, config)));
  return engines;
}

std::map<std::string, HostTensor> tokens(const TransformerDims& d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> ids(size_t(d.batch * d.length));
  for (auto& id : ids) id = int64_t(rng() % uint32_t(d.vocab));
  return {{"input_ids", HostTensor::fromVector<int64_t>({d.batch, d.length}, ids)}};
}

// Every rank's y against the whole model's engine on the same tokens.
void expectRanksComputeTheWholeModel(const ModelBuilder& model, const TransformerDims& d, int ranks, int level = 3) {
  SCOPED_TRACE(std::to_string(ranks) + " ranks, optimisation level " + std::to_string(level));
  const auto network = OnnxImporter().importBytes(model.bytes());
  const auto inputs = tokens(d, uint32_t(ranks));
  const HostTensor want =
      Runtime().load(buildPlan(*network, 1, 0, level))->createExecutionContext()->run(inputs).at("y");
  const auto outputs = runRanks(rankEngines(*network, ranks, level), inputs);
  ASSERT_EQ(outputs.size(), size_t(ranks));
  // The ranks sum each block's products in another order: fp32 rounding apart (about 1e-6 here).
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(checkClose(outputs[size_t(r)].at("y"), want, 1e-5, 1e-5), "") << "rank " << r;
  const auto values = want.toDoubleVector();  // a comparison that could fail: outputs of every size
  EXPECT_GT(*std::max_element(values.begin(), values.end()) - *std::min_element(values.begin(), values.end()), 1.0);
}

TEST(TensorParallelBuild, BertRanksComputeTheWholeModel) {
  const TransformerDims d;
  for (int ranks : {2, 4}) expectRanksComputeTheWholeModel(bertLikeModel(d), d, ranks);
  expectRanksComputeTheWholeModel(bertLikeModel(d), d, 2, 0);  // the split alone, no fusions after it
}

TEST(TensorParallelBuild, Gpt2RanksComputeTheWholeModel) {
  const TransformerDims d;
  for (int ranks : {2, 4}) expectRanksComputeTheWholeModel(gpt2LikeModel(d), d, ranks);
  expectRanksComputeTheWholeModel(gpt2LikeModel(d), d, 4, 0);
}

TEST(TensorParallelBuild, BatchesAndOtherSizesSplitToo) {
  TransformerDims d;
  d.batch = 2;
  d.length = 5;
  d.heads = 6;
  d.depth = 8;
  d.mlp = 90;
  d.layers = 1;
  expectRanksComputeTheWholeModel(gpt2LikeModel(d), d, 2);
  expectRanksComputeTheWholeModel(bertLikeModel(d), d, 3);
}

TEST(TensorParallelBuild, OtherFormsTheExportersWrite) {
  TransformerDims d;
  d.sdpa = true;  // torch.onnx's SDPA: Q and Kᵀ scaled before their product
  expectRanksComputeTheWholeModel(bertLikeModel(d), d, 2);
  d = {};
  d.conv1dAsMatMul = true;  // GPT-2's packed QKV as MatMul + Add on the 3-D activation, then Split
  expectRanksComputeTheWholeModel(gpt2LikeModel(d), d, 4);
  d = {};
  d.dynamicBatch = true;  // reshape targets read from Shape at run time, with constant heads and depth
  d.batch = 2;
  expectRanksComputeTheWholeModel(bertLikeModel(d), d, 2);
}

TEST(TensorParallelBuild, HalfPrecisionRanksMatchTheHalfPrecisionWholeModel) {
  const TransformerDims d;
  const auto network = OnnxImporter().importBytes(gpt2LikeModel(d).bytes());
  BuilderConfig fp16;
  fp16.allowFP16 = true;
  const auto inputs = tokens(d, 5);
  const HostTensor want =
      Runtime().load(buildPlan(*network, 1, 0, 3, fp16))->createExecutionContext()->run(inputs).at("y");
  for (const auto& out : runRanks(rankEngines(*network, 2, 3, fp16), inputs))
    EXPECT_EQ(checkClose(out.at("y"), want, 1e-2, 1e-2), "");
}

TEST(TensorParallelBuild, RanksOnTheTestDeviceBackend) {
  // Device memory the runtime may not touch (backends/test_device): the AllReduce steps run on the
  // device's buffers and meet through the in-process group that createCommunicators gives it.
  const TransformerDims d;
  const auto network = OnnxImporter().importBytes(gpt2LikeModel(d).bytes());
  BuilderConfig device;
  device.backend = BackendKind::kTestDevice;
  const auto inputs = tokens(d, 6);
  const HostTensor want = Runtime().load(buildPlan(*network, 1, 0))->createExecutionContext()->run(inputs).at("y");
  for (const auto& out : runRanks(rankEngines(*network, 2, 3, device), inputs))
    EXPECT_EQ(checkClose(out.at("y"), want, 1e-5, 1e-5), "");
}

TEST(TensorParallelBuild, GatedMlpSplitsBothOfItsFirstProducts) {
  // SwiGLU (Llama's MLP): silu(x·Wg) * (x·Wu) -> ·Wd; gate and up are split alike.
  ModelBuilder mb;
  mb.input("x", onnx_types::kFloat, {2, 5, 24})
      .initializer("gate_w", randomFloats({24, 40}, 1, -0.3f, 0.3f))
      .initializer("up_w", randomFloats({24, 40}, 2, -0.3f, 0.3f))
      .initializer("down_w", randomFloats({40, 24}, 3, -0.3f, 0.3f));
  mb.node("MatMul", {"x", "gate_w"}, {"gate"}, "gate_proj");
  mb.node("MatMul", {"x", "up_w"}, {"up"}, "up_proj");
  mb.node("Sigmoid", {"gate"}, {"sig"}, "sigmoid");
  mb.node("Mul", {"gate", "sig"}, {"silu"}, "silu");
  mb.node("Mul", {"silu", "up"}, {"gated"}, "gated");
  mb.node("MatMul", {"gated", "down_w"}, {"y"}, "down_proj");
  mb.output("y");
  const auto network = OnnxImporter().importBytes(mb.bytes());
  const std::map<std::string, HostTensor> inputs = {{"x", randomFloats({2, 5, 24}, 4)}};
  const HostTensor want = Runtime().load(buildPlan(*network, 1, 0))->createExecutionContext()->run(inputs).at("y");
  const auto outputs = runRanks(rankEngines(*network, 2), inputs);
  for (const auto& out : outputs) EXPECT_EQ(checkClose(out.at("y"), want, 1e-5, 1e-5), "");
}

TEST(TensorParallelBuild, PlansRecordTheirRank) {
  const auto network = OnnxImporter().importBytes(bertLikeModel({}).bytes());
  const auto engine = Runtime().load(buildPlan(*network, 4, 3));
  EXPECT_EQ(engine->planInfo().worldSize, 4);
  EXPECT_EQ(engine->planInfo().rank, 3);
  EXPECT_NE(engine->inspectJson().find("\"tensor_parallel\""), std::string::npos);
  const auto whole = Runtime().load(buildPlan(*network, 1, 0));
  EXPECT_EQ(whole->planInfo().worldSize, 1);
  EXPECT_EQ(whole->planInfo().rank, 0);
  // Alone, a rank says what it needs.
  try {
    engine->createExecutionContext()->run(tokens({}, 1));
    ADD_FAILURE() << "a rank ran without its communicator";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no communicator"), std::string::npos) << e.what();
  }
}

TEST(TensorParallelBuild, RefusesRanksThatDoNotBelongTogether) {
  const auto network = OnnxImporter().importBytes(gpt2LikeModel({}).bytes());
  const RankEngines two = rankEngines(*network, 2, 0);
  auto refused = [](const RankEngines& engines, const std::string& fragment) {
    try {
      checkRankEngines(engines, {"a.rank0.plan", "a.rank1.plan"});
      ADD_FAILURE() << "accepted; wanted: " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  refused({two[1], two[0]}, "'a.rank0.plan' holds rank 1, not rank 0");
  const auto ofFour = Runtime().load(buildPlan(*network, 4, 1, 0));
  refused({two[0], ofFour}, "'a.rank1.plan' is rank 1 of a 4-rank split, but 2 ranks were asked for");
  const auto whole = Runtime().load(buildPlan(*network, 1, 0, 0));
  refused({whole, two[1]}, "'a.rank0.plan' is a whole model, not one rank of a split");
}

TEST(TensorParallelBuild, RefusesCalibratedPrecisions) {
  const auto network = OnnxImporter().importBytes(bertLikeModel({}).bytes());
  BuilderConfig config;
  config.tensorParallelSize = 2;
  config.allowINT8 = true;
  try {
    Builder().build(*network, config);
    ADD_FAILURE() << "an INT8 tensor-parallel build was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("tensor-parallel builds do not calibrate INT8"), std::string::npos)
        << e.what();
  }
}

TEST(TensorParallelBuild, TimesTheRanksInLockStep) {
  const TransformerDims d;
  const auto network = OnnxImporter().importBytes(gpt2LikeModel(d).bytes());
  PerformanceOptions options;
  options.warmupMs = 0;
  options.iterations = 3;
  options.durationSeconds = 0;
  const RankPerformanceReport report = measureRankPerformance(rankEngines(*network, 2, 1), tokens(d, 1), options);
  EXPECT_EQ(report.ranks, 2);
  EXPECT_EQ(report.steps, 3);
  ASSERT_EQ(report.perRank.size(), 2u);
  for (const auto& rank : report.perRank) {
    EXPECT_GT(rank.min, 0);
    EXPECT_LE(rank.max, report.latency.max);
  }
  EXPECT_GT(report.throughput, 0);
  EXPECT_EQ(report.inputShapes, "input_ids:1x7");
  options.streams = 2;
  EXPECT_THROW(measureRankPerformance(rankEngines(*network, 2, 1), tokens(d, 1), options), Error);
}

}  // namespace
