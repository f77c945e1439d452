// Engine outputs in the activation arena are not cleared before a kernel writes them. These tests
// run ops that write only part of their output (scatters, sparse fills, sequence-length padding,
// counts) through Builder -> Engine -> ExecutionContext with an arena full of garbage, and check the
// results against the reference executor.
#include <kiln/builder.h>
#include <kiln/compare.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include "plan/engine_plan.h"
#include "common/test_models.h"
#include "runtime/arena_poison.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

using namespace kiln;
using kiln::test::ModelBuilder;
using kiln::test::randomFloats;

namespace {

using namespace kiln::test::onnx_types;

// Every op under test feeds a Neg, so its own output is an intermediate (planned in the arena)
// rather than a graph output (which stays out of it).
struct PartialWriters {
  ModelBuilder model{17};
  std::vector<std::string> opOutputs;

  void addChecked(const std::string& opOutput) {
    opOutputs.push_back(opOutput);
    model.node("Neg", {opOutput}, {opOutput + "_out"});
    model.output(opOutput + "_out");
  }

  PartialWriters() {
    model.input("x", kFloat, {1, 2, 3, 3}).input("image", kFloat, {1, 1, 4, 4}).input("data", kFloat, {4, 4});
    model.input("square", kFloat, {3, 5}).input("tokens", kInt64, {2, 6}).input("sequence", kFloat, {3, 2, 2});

    model.initializer("pads", HostTensor::fromVector<int64_t>({8}, {0, 0, 1, 2, 0, 0, 2, 1}));
    model.initializer("pad_value", HostTensor::scalar<float>(0.5f));
    model.node("Pad", {"x", "pads", "pad_value"}, {"padded"});
    addChecked("padded");

    model.initializer("scatter_at", HostTensor::fromVector<int64_t>({2, 1}, {3, 1}));
    model.initializer("scatter_rows", randomFloats({2, 4}, 101));
    model.node("ScatterND", {"data", "scatter_at", "scatter_rows"}, {"scattered"});
    addChecked("scattered");

    model.initializer("deconv_w", randomFloats({2, 3, 3, 3}, 102));
    model.initializer("deconv_b", randomFloats({3}, 103));
    auto& deconv = model.node("ConvTranspose", {"x", "deconv_w", "deconv_b"}, {"deconvolved"});
    ModelBuilder::setInts(deconv, "strides", {2, 2});
    addChecked("deconvolved");

    auto& pool = model.node("MaxPool", {"image"}, {"pooled", "argmax"});
    ModelBuilder::setInts(pool, "kernel_shape", {2, 2});
    ModelBuilder::setInts(pool, "strides", {2, 2});
    auto& unpool = model.node("MaxUnpool", {"pooled", "argmax"}, {"unpooled"});
    ModelBuilder::setInts(unpool, "kernel_shape", {2, 2});
    ModelBuilder::setInts(unpool, "strides", {2, 2});
    addChecked("unpooled");

    model.initializer("spatial_axes", HostTensor::fromVector<int64_t>({2}, {2, 3}));
    model.node("ReduceSum", {"x", "spatial_axes"}, {"summed"});
    addChecked("summed");
    auto& reduceMax = model.node("ReduceMax", {"x"}, {"maxed"});
    ModelBuilder::setInts(reduceMax, "axes", {1});
    addChecked("maxed");

    auto& eye = model.node("EyeLike", {"square"}, {"eye"});
    ModelBuilder::setInt(eye, "k", 1);
    addChecked("eye");

    model.initializer("zeros_shape", HostTensor::fromVector<int64_t>({2}, {2, 3}));
    model.node("ConstantOfShape", {"zeros_shape"}, {"zeros"});
    addChecked("zeros");

    auto& tfidf = model.node("TfIdfVectorizer", {"tokens"}, {"counts"});
    ModelBuilder::setString(tfidf, "mode", "TF");
    ModelBuilder::setInt(tfidf, "min_gram_length", 1);
    ModelBuilder::setInt(tfidf, "max_gram_length", 1);
    ModelBuilder::setInt(tfidf, "max_skip_count", 0);
    ModelBuilder::setInts(tfidf, "ngram_counts", {0});
    ModelBuilder::setInts(tfidf, "ngram_indexes", {0, 1, 2});
    ModelBuilder::setInts(tfidf, "pool_int64s", {2, 3, 5});
    addChecked("counts");

    // The second batch entry is one step shorter: its last step of Y stays zero.
    const int64_t hidden = 3;
    model.initializer("lstm_w", randomFloats({1, 4 * hidden, 2}, 104));
    model.initializer("lstm_r", randomFloats({1, 4 * hidden, hidden}, 105));
    model.initializer("lengths", HostTensor::fromVector<int32_t>({2}, {3, 2}));
    auto& lstm = model.node("LSTM", {"sequence", "lstm_w", "lstm_r", "", "lengths"}, {"hidden_states"});
    ModelBuilder::setInt(lstm, "hidden_size", hidden);
    addChecked("hidden_states");
  }
};

std::map<std::string, HostTensor> randomInputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> token(0, 6);
  std::vector<int64_t> tokens(12);
  for (auto& t : tokens) t = token(rng);
  return {{"x", randomFloats({1, 2, 3, 3}, seed + 1)},      {"image", randomFloats({1, 1, 4, 4}, seed + 2)},
          {"data", randomFloats({4, 4}, seed + 3)},         {"square", randomFloats({3, 5}, seed + 4)},
          {"tokens", HostTensor::fromVector<int64_t>({2, 6}, tokens)}, {"sequence", randomFloats({3, 2, 2}, seed + 5)}};
}

class ArenaOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    network_ = OnnxImporter().importBytes(partial_.model.bytes());
    BuilderConfig config;
    config.optimizationLevel = 0;  // every op stays a layer of its own
    engine_ = Runtime().load(Builder().build(*network_, config).plan);
  }
  void TearDown() override { setArenaPoisoningForTesting(false); }

  void expectReferenceResults(ExecutionContext& context, const std::map<std::string, HostTensor>& inputs) {
    ValueMap feeds;
    for (const auto& [name, tensor] : inputs) feeds[name] = Value(tensor);
    ValueMap expected = ReferenceExecutor(network_).run(feeds);
    auto actual = context.run(inputs);
    for (const auto& name : network_->outputs())
      EXPECT_EQ(checkClose(Value(actual.at(name)), expected.at(name), 1e-6, 1e-6), "") << name;
  }

  PartialWriters partial_;
  std::shared_ptr<Network> network_;
  std::shared_ptr<Engine> engine_;
};

TEST_F(ArenaOutputs, EveryOpUnderTestWritesIntoTheArena) {
  std::set<std::string> planned;
  for (const auto& arena : engine_->plan().memory)
    for (const auto& a : arena.assignments) planned.insert(a.tensor);
  for (const auto& name : partial_.opOutputs) EXPECT_TRUE(planned.count(name)) << name << " is not in the arena";
}

TEST_F(ArenaOutputs, AnArenaFullOfNaNsGivesTheReferenceResults) {
  setArenaPoisoningForTesting(true);
  auto context = engine_->createExecutionContext();
  expectReferenceResults(*context, randomInputs(7));
  expectReferenceResults(*context, randomInputs(8));
}

TEST_F(ArenaOutputs, BackToBackRunsDoNotSeeTheLastRunsValues) {
  auto context = engine_->createExecutionContext();
  for (uint32_t seed : {11u, 12u, 13u}) expectReferenceResults(*context, randomInputs(seed));
}

}  // namespace
