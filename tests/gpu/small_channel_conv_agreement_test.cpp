// CPU and CUDA engines agree on convolutions of few input channels run by Kiln's tensor-core
// kernel (cuda_small_channel_conv.cpp), the tactic forced: ResNet's stem (7x7 stride 2, 3 -> 64,
// bias, Relu) and an odd chain (3x3 4 -> 8 with SiLU, then 1x1 8 -> 16 without bias reading the first
// one's output channels-last), in fp16 and bf16; and the stem with its 3x3 stride 2 MaxPool fused
// into one kiln.FusedConvPool on the GPU (the CPU runs the two apart), the small-channel tactic
// forced.
#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

struct ConvSpec {
  std::string name;
  std::vector<int64_t> w;  // [K, C, R, S]
  int64_t stride, pad;
  bool bias;
};

void addConv(ModelBuilder& mb, const std::string& in, const ConvSpec& c, uint32_t seed) {
  mb.initializer(c.name + "_w", test::randomFloats(c.w, seed, -0.3f, 0.3f));
  std::vector<std::string> inputs{in, c.name + "_w"};
  if (c.bias) {
    mb.initializer(c.name + "_b", test::randomFloats({c.w[0]}, seed + 1));
    inputs.push_back(c.name + "_b");
  }
  auto& node = mb.node("Conv", inputs, {c.name}, c.name);
  ModelBuilder::setInts(node, "strides", {c.stride, c.stride});
  ModelBuilder::setInts(node, "pads", {c.pad, c.pad, c.pad, c.pad});
}

ModelBuilder stem(const std::vector<int64_t>& x) {
  ModelBuilder mb;
  mb.input("x", kFloat, x).output("y");
  addConv(mb, "x", {"stem", {64, x[1], 7, 7}, 2, 3, true}, 300);
  mb.node("Relu", {"stem"}, {"y"}, "relu");
  return mb;
}

ModelBuilder stemWithPool(const std::vector<int64_t>& x) {
  ModelBuilder mb;
  mb.input("x", kFloat, x).output("y");
  addConv(mb, "x", {"stem", {64, x[1], 7, 7}, 2, 3, true}, 330);
  mb.node("Relu", {"stem"}, {"stem_relu"}, "relu");
  auto& pool = mb.node("MaxPool", {"stem_relu"}, {"y"}, "pool");
  ModelBuilder::setInts(pool, "kernel_shape", {3, 3});
  ModelBuilder::setInts(pool, "strides", {2, 2});
  ModelBuilder::setInts(pool, "pads", {1, 1, 1, 1});
  return mb;
}

ModelBuilder chain(const std::vector<int64_t>& x) {
  ModelBuilder mb;
  mb.input("x", kFloat, x).output("y");
  addConv(mb, "x", {"first", {8, x[1], 3, 3}, 1, 1, true}, 310);
  mb.node("Sigmoid", {"first"}, {"first_sig"}, "first_sig");
  mb.node("Mul", {"first", "first_sig"}, {"first_act"}, "first_act");
  addConv(mb, "first_act", {"second", {16, 8, 1, 1}, 1, 0, false}, 320);
  mb.node("Identity", {"second"}, {"y"}, "out");
  return mb;
}

void expectAgreement(const ModelBuilder& model, const std::vector<int64_t>& x, const std::vector<std::string>& convs,
                     const std::string& convType = "") {
  for (Precision precision : {Precision::kFP16, Precision::kBF16}) {
    SCOPED_TRACE(toString(precision));
    test::AgreementOptions options;
    options.precision = precision;
    for (const std::string& conv : convs)
      options.forcedTactics[conv] = std::string("kiln.conv.smallc.") + toString(precision);
    const auto agreement = test::expectBackendsAgree(model.bytes(), {{"x", test::randomFloats(x, 9)}}, options);
    test::expectNoFailedTactics(agreement);
    int ran = 0;
    for (const LayerSummary& l : agreement.gpuLayers) {
      ran += l.tactic.rfind("kiln.conv.smallc.", 0) == 0;
      if (!convType.empty() && l.name == convs.front()) EXPECT_EQ(l.type, convType);
      EXPECT_NE(l.type, "MaxPool") << "the pool was not fused";
      EXPECT_NE(l.role, "reformat") << l.name << " re-lays out " << l.inputs.at(0).name;
      if (l.name == "second" && l.tactic.rfind("kiln.conv.smallc.", 0) == 0)
        EXPECT_EQ(l.inputs.at(0).format, "nhwc") << "the chain's second convolution reads its input linear";
    }
    EXPECT_EQ(ran, int(convs.size())) << "the small-channel tactic did not run on every convolution";
  }
}

}  // namespace

TEST(SmallChannelConvAgreement, ResNetStem) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<int64_t> x{2, 3, 30, 27};
  expectAgreement(stem(x), x, {"stem"});
}

TEST(SmallChannelConvAgreement, ChainWithChannelsLastBetween) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<int64_t> x{1, 4, 17, 13};
  expectAgreement(chain(x), x, {"first", "second"});
}

TEST(SmallChannelConvAgreement, ResNetStemWithMaxPoolFused) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<int64_t> x{2, 3, 33, 30};
  expectAgreement(stemWithPool(x), x, {"stem"}, "kiln.FusedConvPool");
}

// The split form the CUDA backend falls back on where the small-channel kernel refuses (a layer
// kept in float32 inside an fp16 build, rows wider than the kernel's; here forced): the FusedConv's
// cuDNN step, then the pool kernel. (Builds without fp16 / bf16 do not fuse the pool at all.)
TEST(SmallChannelConvAgreement, ResNetStemWithMaxPoolSplit) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<int64_t> x{2, 3, 33, 30};
  for (Precision precision : {Precision::kFP16, Precision::kBF16}) {
    SCOPED_TRACE(toString(precision));
    test::AgreementOptions options;
    options.precision = precision;
    options.forcedTactics["stem"] = std::string("cuda.convpool.split.") + toString(precision);
    const auto agreement =
        test::expectBackendsAgree(stemWithPool(x).bytes(), {{"x", test::randomFloats(x, 9)}}, options);
    test::expectNoFailedTactics(agreement);
    bool split = false;
    for (const LayerSummary& l : agreement.gpuLayers)
      split |= l.type == "kiln.FusedConvPool" && l.tactic.rfind("cuda.convpool.split.", 0) == 0;
    EXPECT_TRUE(split) << "the stem did not run the split form";
  }
}
