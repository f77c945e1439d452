// Activations kept channels-last (NHWC) between oneDNN convolutions: the engine picks exactly the
// tensors whose maker and every reader take that layout, and every mix of layouts a convolution can
// meet (input, residual, output each NCHW or NHWC) gives the reference's values, at the outputs and
// at every intermediate tensor the engine reports (shown in NCHW order).
#include <kiln/builder.h>
#include <kiln/compare.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runners.h>
#include <kiln/runtime.h>

#include "backends/backend.h"
#include "plan/engine_plan.h"
#include "common/test_models.h"
#include "plan/plan_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <thread>

using namespace kiln;
using kiln::test::ModelBuilder;

namespace {

using namespace kiln::test::onnx_types;

// Six 3x3 convolutions (16 channels, 10x10) with Relu, three adding a residual first (the pool
// stays on Kiln's NCHW kernel):
//   y1 = conv(x)            read by conv2 (input) and conv3 (residual)      -> NHWC
//   y2 = conv(y1)           read by conv3                                   -> NHWC
//   y3 = conv(y2) + y1      read by conv4, conv5 (residual) and GlobalAveragePool -> NCHW
//   y4 = conv(y3)           read by conv5 and conv6 (residual)              -> NHWC
//   y5 = conv(y4) + y3      read by conv6                                   -> NHWC
//   y6 = conv(y5) + y4      a graph output                                  -> NCHW
// so the convolutions meet (in, residual, out) = (C,-,H) (H,-,H) (H,H,C) (C,-,H) (H,C,H) (H,H,C).
std::shared_ptr<Network> convChain() {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, 16, 10, 10}).output("y6").output("pooled");
  const char* residuals[] = {nullptr, nullptr, "y1", nullptr, "y3", "y4"};
  std::string in = "x";
  for (int i = 1; i <= 6; ++i) {
    const std::string n = std::to_string(i), w = "w" + n, b = "b" + n;
    mb.initializer(w, test::randomFloats({16, 16, 3, 3}, uint32_t(10 + i), -0.25f, 0.25f));
    mb.initializer(b, test::randomFloats({16}, uint32_t(20 + i)));
    auto& conv = mb.node("Conv", {in, w, b}, {"c" + n}, "conv" + n);
    ModelBuilder::setInts(conv, "pads", {1, 1, 1, 1});
    std::string beforeRelu = "c" + n;
    if (residuals[i - 1]) {
      mb.node("Add", {beforeRelu, residuals[i - 1]}, {"a" + n}, "add" + n);
      beforeRelu = "a" + n;
    }
    mb.node("Relu", {beforeRelu}, {"y" + n}, "relu" + n);
    in = "y" + n;
  }
  mb.node("GlobalAveragePool", {"y3"}, {"pooled"}, "pool");
  return OnnxImporter().importBytes(mb.bytes());
}

// A plan built with every convolution on its oneDNN tactic, and every pool on oneDNN's (`pools`)
// or Kiln's; `expected` layers forced onto oneDNN.
std::vector<uint8_t> planOnOneDnn(const Network& network, bool pools = false, int expected = 6) {
  BuilderConfig config;
  int forced = 0;
  for (const auto& layer : Builder().build(network, config).report.layers) {
    if (layer.type.find("Conv") != std::string::npos) {
      config.forcedTactics[layer.name] = "cpu.conv.onednn";
      ++forced;
    } else if (layer.type.find("Pool") != std::string::npos) {
      config.forcedTactics[layer.name] = pools ? "cpu.pool.onednn" : "cpu.pool.kiln";
      forced += pools;
    }
  }
  EXPECT_EQ(forced, expected);
  return Builder().build(network, config).plan;
}

TEST(ChannelsLast, KeepsExactlyTheTensorsBetweenOneDnnConvolutions) {
  auto description = readPlan(planOnOneDnn(*convChain()));
  std::vector<std::string> tactics;
  std::vector<Precision> precisions;
  for (const auto& d : description->layers) {
    tactics.push_back(d.tactic);
    precisions.push_back(d.precision);
  }
  const auto formats = makeCpuBackend()->tensorFormats(*description->network, tactics, precisions);
  std::set<std::string> channelsLast;
  for (const auto& [tensor, format] : formats) {
    EXPECT_EQ(format, TensorFormat::kNHWC) << tensor;
    channelsLast.insert(tensor);
  }
  EXPECT_EQ(channelsLast, (std::set<std::string>{"y1", "y2", "y4", "y5"}));

  // Any other tactic on a reader, or fp16 activations on the maker, keeps the tensor linear.
  tactics[1] = "cpu.conv.im2col_gemm";  // conv2 reads y1
  auto without = makeCpuBackend()->tensorFormats(*description->network, tactics, precisions);
  EXPECT_EQ(without.count("y1"), 0u);
  EXPECT_EQ(without.count("y2"), 0u);  // conv2 makes it
  EXPECT_EQ(without.count("y4"), 1u);
  precisions[3] = Precision::kFP16;  // conv4 makes y4
  EXPECT_EQ(makeCpuBackend()->tensorFormats(*description->network, tactics, precisions).count("y4"), 0u);
}

TEST(ChannelsLast, EveryLayoutMixMatchesTheReferenceAtEveryTensor) {
  auto network = convChain();
  auto engine = Runtime().load(planOnOneDnn(*network));
  const std::map<std::string, HostTensor> inputs = {{"x", test::randomFloats({1, 16, 10, 10}, 7)}};
  const Tolerance tolerance{1e-4, 1e-4};
  for (int run = 0; run < 2; ++run) {  // the second run reuses the prepared primitives and the arena
    const ComparisonReport report =
        compareRunners(makeReferenceRunner(network), makeEngineRunner(engine), inputs, tolerance, true);
    EXPECT_TRUE(report.pass) << report.toJson();
    ASSERT_EQ(report.outputs.size(), 2u);
    std::set<std::string> compared;
    for (const auto& layer : report.layers) {
      EXPECT_TRUE(layer.pass) << layer.name << " max abs error " << layer.maxAbsError;
      compared.insert(layer.name);
    }
    for (const char* tensor : {"y1", "y2", "y3", "y4", "y5"}) EXPECT_TRUE(compared.count(tensor)) << tensor;
  }
}

}  // namespace

// A CNN's stem and head: conv -> MaxPool -> conv -> GlobalAveragePool, all on oneDNN. The pool
// keeps the chain channels-last; the head's output (a graph output) is NCHW.
TEST(ChannelsLast, PoolsCarryTheLayoutThroughStemAndHead) {
  ModelBuilder mb;
  mb.input("x", kFloat, {2, 8, 16, 16}).output("pooled");
  mb.initializer("w1", test::randomFloats({16, 8, 3, 3}, 31, -0.3f, 0.3f)).initializer("w2", test::randomFloats({16, 16, 3, 3}, 32, -0.3f, 0.3f));
  ModelBuilder::setInts(mb.node("Conv", {"x", "w1"}, {"c1"}, "stem"), "pads", {1, 1, 1, 1});
  auto& pool = mb.node("MaxPool", {"c1"}, {"p1"}, "maxpool");
  ModelBuilder::setInts(pool, "kernel_shape", {3, 3});
  ModelBuilder::setInts(pool, "strides", {2, 2});
  ModelBuilder::setInts(pool, "pads", {1, 1, 1, 1});
  ModelBuilder::setInts(mb.node("Conv", {"p1", "w2"}, {"c2"}, "block"), "pads", {1, 1, 1, 1});
  mb.node("GlobalAveragePool", {"c2"}, {"pooled"}, "head");
  auto network = OnnxImporter().importBytes(mb.bytes());
  auto engine = Runtime().load(planOnOneDnn(*network, /*pools=*/true, 4));
  const auto layouts = engine->nonLinearTensorLayouts();
  EXPECT_EQ(layouts, (std::map<std::string, std::string>{{"c1", "nhwc"}, {"p1", "nhwc"}, {"c2", "nhwc"}}));
  const std::map<std::string, HostTensor> inputs = {{"x", test::randomFloats({2, 8, 16, 16}, 33)}};
  const ComparisonReport report =
      compareRunners(makeReferenceRunner(network), makeEngineRunner(engine), inputs, Tolerance{1e-4, 1e-4}, true);
  EXPECT_TRUE(report.pass) << report.toJson();
  EXPECT_EQ(report.layers.size(), 4u);
}

// Several execution contexts of one engine run at once from their own threads (as a server would):
// the oneDNN steps' shared primitive and packed-weight caches, the workspace-size cache and the
// OpenMP regions started from several threads must keep each run's results its own.
TEST(ChannelsLast, ContextsRunConcurrentlyOnOneEngine) {
  auto network = convChain();
  auto engine = Runtime().load(planOnOneDnn(*network));
  constexpr int kThreads = 3, kRuns = 8;
  std::vector<std::map<std::string, HostTensor>> inputs, expected;
  for (int t = 0; t < kThreads * kRuns; ++t) {
    inputs.push_back({{"x", test::randomFloats({1, 16, 10, 10}, uint32_t(100 + t))}});
    std::map<std::string, HostTensor> want;
    for (auto& [name, value] : ReferenceExecutor(network).run({{"x", Value(inputs.back().at("x"))}}))
      want[name] = value.tensor;
    expected.push_back(want);
  }
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto context = engine->createExecutionContext();
      for (int r = 0; r < kRuns && failures[t].empty(); ++r) {
        const int i = t * kRuns + r;
        auto got = context->run(inputs[i]);
        for (const auto& [name, want] : expected[i])
          for (int64_t e = 0; e < want.elementCount(); ++e)
            if (std::fabs(got.at(name).data<float>()[e] - want.data<float>()[e]) >
                1e-4 * (1 + std::fabs(want.data<float>()[e]))) {
              failures[t] = "thread " + std::to_string(t) + " run " + std::to_string(r) + " output " + name +
                            " element " + std::to_string(e);
              break;
            }
      }
    });
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) EXPECT_EQ(failure, "");
}
