// Remembered inference of If/Loop/Scan layers: inferred once per set of input and scope types, and
// inferred again when a shape changes (between iterations, between runs).
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include "common/test_models.h"
#include "runtime/subgraph_cache.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using kiln::test::randomFloats;

namespace {

using namespace kiln::test::onnx_types;

// A Loop whose carried value grows by x each iteration (so its shape changes every time) and whose
// body picks, through a nested If reading the grown value from outside its branches, 2 * grown
// for the first two iterations and -grown after.
ModelBuilder growingLoop() {
  ModelBuilder then(17), otherwise(17);
  then.node("Add", {"grown", "grown"}, {"doubled"});
  then.output("doubled", kFloat);
  otherwise.node("Neg", {"grown"}, {"negated"});
  otherwise.output("negated", kFloat);

  ModelBuilder body(17);
  body.input("iteration", kInt64, {}).input("cond_in", kBool, {}).input("acc", kFloat, {-1});
  body.initializer("two", HostTensor::scalar<int64_t>(2));
  body.node("Identity", {"cond_in"}, {"cond_out"});
  auto& concat = body.node("Concat", {"acc", "x"}, {"grown"});
  ModelBuilder::setInt(concat, "axis", 0);
  body.node("Less", {"iteration", "two"}, {"early"});
  auto& choice = body.node("If", {"early"}, {"acc_out"});
  ModelBuilder::setGraph(choice, "then_branch", then);
  ModelBuilder::setGraph(choice, "else_branch", otherwise);
  body.output("cond_out", kBool).output("acc_out", kFloat);

  ModelBuilder mb(17);
  mb.input("trips", kInt64, {}).input("x", kFloat, {2}).input("start", kFloat, {1});
  mb.initializer("keep_going", HostTensor::scalar<bool>(true));
  auto& loop = mb.node("Loop", {"trips", "keep_going", "start"}, {"final"});
  ModelBuilder::setGraph(loop, "body", body);
  mb.output("final");
  return mb;
}

std::vector<double> growingLoopByHand(int64_t trips, const HostTensor& x, const HostTensor& start) {
  std::vector<double> acc = start.toDoubleVector();
  for (int64_t i = 0; i < trips; ++i) {
    for (double v : x.toDoubleVector()) acc.push_back(v);
    for (double& v : acc) v = i < 2 ? v + v : -v;
  }
  return acc;
}

std::map<std::string, HostTensor> loopInputs(int64_t trips, uint32_t seed) {
  return {{"trips", HostTensor::scalar<int64_t>(trips)},
          {"x", randomFloats({2}, seed)},
          {"start", randomFloats({1}, seed + 1)}};
}

TEST(SubgraphCache, ReferenceLoopWithShapesChangingEveryIterationMatchesTheHandComputation) {
  ReferenceExecutor executor(OnnxImporter().importBytes(growingLoop().bytes()));
  for (int64_t trips : {0, 1, 4}) {
    auto inputs = loopInputs(trips, 3);
    ValueMap feeds;
    for (const auto& [name, t] : inputs) feeds[name] = Value(t);
    ValueMap outputs = executor.run(feeds);
    EXPECT_EQ(outputs.at("final").tensor.toDoubleVector(), growingLoopByHand(trips, inputs.at("x"), inputs.at("start"))) << trips;
  }
}

TEST(SubgraphCache, EngineRunsWithDifferentTripCountsEachMatchTheHandComputation) {
  auto network = OnnxImporter().importBytes(growingLoop().bytes());
  auto engine = Runtime().load(Builder().build(*network, BuilderConfig{}).plan);
  auto context = engine->createExecutionContext();
  for (int64_t trips : {4, 1, 3, 4}) {
    auto inputs = loopInputs(trips, uint32_t(10 + trips));
    HostTensor final = context->run(inputs).at("final");
    ASSERT_EQ(final.dims(), (std::vector<int64_t>{1 + 2 * trips}));
    EXPECT_EQ(final.toDoubleVector(), growingLoopByHand(trips, inputs.at("x"), inputs.at("start"))) << trips;
  }
}

// The If layer of the body and the type lookups its inference would see.
class IfInference : public ::testing::Test {
 protected:
  void SetUp() override {
    network_ = OnnxImporter().importBytes(growingLoop().bytes());
    const Network& body = network_->layers().at(0).attrGraph("body");
    for (const Layer& l : body.layers())
      if (l.opType == "If") ifLayer_ = &l;
    ASSERT_NE(ifLayer_, nullptr);
    cond_.dtype = DataType::kBool;
    cond_.shape = Shape::fromDims({});
    grown_.dtype = DataType::kFloat32;
    grown_.shape = Shape::fromDims({3});
  }

  // Output types through the cache, counting the inferences it asks for.
  std::vector<Tensor> outputTypes() {
    const Network::ScopeLookup scope = [&](const std::string& name) -> const Tensor* {
      return name == "grown" ? &grown_ : nullptr;
    };
    return cache_.outputTypes(*ifLayer_, {&cond_}, scope, [&] {
      ++inferences_;
      Tensor out = grown_;
      out.name = "inferred";
      return std::vector<Tensor>{out};
    });
  }

  std::shared_ptr<Network> network_;
  const Layer* ifLayer_ = nullptr;
  Tensor cond_, grown_;
  SubgraphInferenceCache cache_;
  int inferences_ = 0;
};

TEST_F(IfInference, SameTypesInferOnce) {
  for (int i = 0; i < 5; ++i) EXPECT_EQ(outputTypes().at(0).shape.toString(), "[3]");
  EXPECT_EQ(inferences_, 1);
}

TEST_F(IfInference, ANewShapeOfAnOuterValueInfersAgain) {
  outputTypes();
  grown_.shape = Shape::fromDims({5});
  EXPECT_EQ(outputTypes().at(0).shape.toString(), "[5]");
  grown_.shape = Shape::fromDims({3});
  EXPECT_EQ(outputTypes().at(0).shape.toString(), "[3]");
  EXPECT_EQ(inferences_, 2);  // [3] was remembered
}

TEST_F(IfInference, ANewInputTypeInfersAgain) {
  outputTypes();
  cond_.shape = Shape::fromDims({1});
  outputTypes();
  cond_.dtype = DataType::kInt64;
  outputTypes();
  EXPECT_EQ(inferences_, 3);
}

TEST_F(IfInference, AFailedInferenceIsNotRemembered) {
  const Network::ScopeLookup scope = [&](const std::string&) -> const Tensor* { return &grown_; };
  auto failing = [&]() -> std::vector<Tensor> {
    ++inferences_;
    throw Error(ErrorCode::kInvalidModel, "bad branch");
  };
  EXPECT_THROW(cache_.outputTypes(*ifLayer_, {&cond_}, scope, failing), Error);
  EXPECT_THROW(cache_.outputTypes(*ifLayer_, {&cond_}, scope, failing), Error);
  EXPECT_EQ(inferences_, 2);
}

}  // namespace

namespace {

// An initializer of the main graph that only an If branch reads must survive the builder's passes
// (dead-code elimination once dropped it, and the engine failed with "no value").
TEST(SubgraphCache, InitializerReadOnlyInsideABranchSurvivesTheBuild) {
  ModelBuilder then(17), otherwise(17);
  then.node("Mul", {"x", "scale"}, {"scaled"});
  then.output("scaled", kFloat);
  otherwise.node("Sub", {"x", "scale"}, {"shifted"});
  otherwise.output("shifted", kFloat);
  ModelBuilder mb(17);
  mb.input("flag", kBool, {}).input("x", kFloat, {4});
  mb.initializer("scale", randomFloats({4}, 11));
  auto& choice = mb.node("If", {"flag"}, {"y"});
  ModelBuilder::setGraph(choice, "then_branch", then);
  ModelBuilder::setGraph(choice, "else_branch", otherwise);
  mb.output("y");

  auto network = OnnxImporter().importBytes(mb.bytes());
  ReferenceExecutor reference(OnnxImporter().importBytes(mb.bytes()));
  BuilderConfig config;
  config.optimizationLevel = 3;
  auto engine = Runtime().load(Builder().build(*network, config).plan);
  auto context = engine->createExecutionContext();
  for (bool flag : {true, false}) {
    HostTensor x = randomFloats({4}, flag ? 1 : 2);
    HostTensor got = context->run({{"flag", HostTensor::scalar<bool>(flag)}, {"x", x}}).at("y");
    ValueMap feeds{{"flag", Value(HostTensor::scalar<bool>(flag))}, {"x", Value(x)}};
    EXPECT_EQ(got.toDoubleVector(), reference.run(feeds).at("y").tensor.toDoubleVector()) << flag;
  }
}

}  // namespace
