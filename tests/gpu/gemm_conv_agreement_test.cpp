// CPU and CUDA engines agree on pointwise convolutions run as cuBLASLt products or on Kiln's narrow
// pointwise kernel (cuda_gemm_conv.cpp), the tactic forced on every 1x1 convolution: a ResNet bottleneck at odd
// spatial sizes (1x1 + bias + Relu, a 3x3 between, 1x1 + bias + residual + Relu, a 1x1 shortcut
// without bias), and a 1x1 with SiLU (an activation cuBLASLt's epilogue lacks, so Kiln's
// elementwise kernels finish it) between a linear graph input and a linear graph output, strided
// ones (input pixels gathered first) and patch embeddings, in fp16, bf16, fp32 and tf32 (the narrow
// kernel: fp16, bf16).
#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

void addConv(ModelBuilder& mb, const std::string& in, const std::string& name, const std::vector<int64_t>& w,
             int64_t pad, bool bias, uint32_t seed, int64_t stride = 1) {
  mb.initializer(name + "_w", test::randomFloats(w, seed, -0.3f, 0.3f));
  std::vector<std::string> inputs{in, name + "_w"};
  if (bias) {
    mb.initializer(name + "_b", test::randomFloats({w[0]}, seed + 1));
    inputs.push_back(name + "_b");
  }
  auto& node = mb.node("Conv", inputs, {name}, name);
  ModelBuilder::setInts(node, "pads", {pad, pad, pad, pad});
  ModelBuilder::setInts(node, "strides", {stride, stride});
}

// x [N, 16, H, W] -> reduce (1x1, 16 -> 8, Relu) -> 3x3 (8 -> 8, Relu) -> expand (1x1, 8 -> 24)
// + shortcut (1x1, 16 -> 24, no bias) -> Relu. With stride 2 on the 3x3 and the shortcut, a
// torchvision ResNet's downsampling block.
ModelBuilder bottleneck(const std::vector<int64_t>& x, int64_t stride = 1) {
  ModelBuilder mb;
  mb.input("x", kFloat, x).output("y");
  addConv(mb, "x", "reduce", {8, x[1], 1, 1}, 0, true, 400);
  mb.node("Relu", {"reduce"}, {"reduce_act"}, "reduce_relu");
  addConv(mb, "reduce_act", "spatial", {8, 8, 3, 3}, 1, true, 410, stride);
  mb.node("Relu", {"spatial"}, {"spatial_act"}, "spatial_relu");
  addConv(mb, "spatial_act", "expand", {24, 8, 1, 1}, 0, true, 420);
  addConv(mb, "x", "shortcut", {24, x[1], 1, 1}, 0, false, 430, stride);
  mb.node("Add", {"expand", "shortcut"}, {"sum"}, "residual");
  mb.node("Relu", {"sum"}, {"y"}, "out_relu");
  return mb;
}

ModelBuilder siluProjection(const std::vector<int64_t>& x, int64_t stride = 1) {
  ModelBuilder mb;
  mb.input("x", kFloat, x).output("y");
  addConv(mb, "x", "project", {40, x[1], 1, 1}, 0, true, 440, stride);
  mb.node("Sigmoid", {"project"}, {"project_sig"}, "project_sig");
  mb.node("Mul", {"project", "project_sig"}, {"y"}, "project_silu");
  return mb;
}

// `tactic` + the precision's tag forced on `convs` in each of `precisions`.
void expectAgreement(const ModelBuilder& model, const std::vector<int64_t>& x, const std::vector<std::string>& convs,
                     const std::string& tactic = "cublaslt.conv1x1.{}.h0",
                     const std::vector<Precision>& precisions = {Precision::kFP16, Precision::kBF16, Precision::kFP32,
                                                                 Precision::kTF32}) {
  for (Precision precision : precisions) {
    SCOPED_TRACE(toString(precision));
    test::AgreementOptions options;
    options.precision = precision;
    std::string id = tactic;
    id.replace(id.find("{}"), 2, toString(precision));
    for (const std::string& conv : convs) options.forcedTactics[conv] = id;
    const auto agreement = test::expectBackendsAgree(model.bytes(), {{"x", test::randomFloats(x, 11)}}, options);
    test::expectNoFailedTactics(agreement);
    int ran = 0;
    for (const LayerSummary& l : agreement.gpuLayers) ran += l.tactic == id;
    EXPECT_EQ(ran, int(convs.size())) << id << " did not run on every pointwise convolution";
  }
}

// Kiln's narrow pointwise kernel (fp16 and bf16 only).
void expectNarrowAgreement(const ModelBuilder& model, const std::vector<int64_t>& x,
                           const std::vector<std::string>& convs) {
  expectAgreement(model, x, convs, "kiln.conv1x1.narrow.{}", {Precision::kFP16, Precision::kBF16});
}

}  // namespace

TEST(GemmConvAgreement, BottleneckAtOddSizes) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{2, 16, 9, 7}, std::vector<int64_t>{3, 16, 5, 11}}) {
    SCOPED_TRACE(testing::PrintToString(x));
    expectAgreement(bottleneck(x), x, {"reduce", "expand", "shortcut"});
  }
}

TEST(GemmConvAgreement, SiluProjectionBetweenLinearGraphTensors) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<int64_t> x{1, 24, 13, 3};
  expectAgreement(siluProjection(x), x, {"project"});
}

// Strided 1x1 convolutions gather their input's pixels first: ResNet's downsampling shortcut at odd
// sizes (the last row and column dropped or kept by the stride), and one on a linear graph input.
TEST(GemmConvAgreement, StridedShortcutsAtOddSizes) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{2, 16, 9, 7}, std::vector<int64_t>{3, 16, 6, 11}}) {
    SCOPED_TRACE(testing::PrintToString(x));
    expectAgreement(bottleneck(x, 2), x, {"reduce", "expand", "shortcut"});
  }
  const std::vector<int64_t> x{2, 24, 13, 5};
  expectAgreement(siluProjection(x, 3), x, {"project"});
}

// The narrow kernel on the same layers: a bottleneck's reduction, expansion with its residual and
// ReLU, and shortcut (8 to 24 channels), strided ones, and the SiLU projection between linear graph
// tensors (its input and output re-laid out around it).
TEST(GemmConvAgreement, NarrowKernelOnBottlenecksAndProjections) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (int64_t stride : {1, 2}) {
    const std::vector<int64_t> x{3, 16, 9, 7};
    SCOPED_TRACE("stride " + std::to_string(stride));
    expectNarrowAgreement(bottleneck(x, stride), x, {"reduce", "expand", "shortcut"});
  }
  const std::vector<int64_t> x{1, 24, 13, 3};
  expectNarrowAgreement(siluProjection(x), x, {"project"});
  const std::vector<int64_t> y{2, 24, 13, 5};
  expectNarrowAgreement(siluProjection(y, 3), y, {"project"});
}

namespace {

// x [N, C, H, W] -> Conv (kernel kh x kw, stride sh x sw, bias) -> Relu: a patch embedding.
ModelBuilder patchEmbedding(const std::vector<int64_t>& x, int64_t outChannels, std::vector<int64_t> kernel,
                            std::vector<int64_t> strides) {
  ModelBuilder mb;
  mb.input("x", kFloat, x).output("y");
  mb.initializer("patch_w", test::randomFloats({outChannels, x[1], kernel[0], kernel[1]}, 450, -0.3f, 0.3f));
  mb.initializer("patch_b", test::randomFloats({outChannels}, 451));
  auto& node = mb.node("Conv", {"x", "patch_w", "patch_b"}, {"patch"}, "patch");
  ModelBuilder::setInts(node, "strides", strides);
  mb.node("Relu", {"patch"}, {"y"}, "patch_relu");
  return mb;
}

}  // namespace

// Patch embeddings (unpadded windows no wider than their stride, ViT's stem) gather each output
// pixel's patch, then one product: square patches on an image whose last rows and columns fall
// outside every window, a kernel narrower than its stride, a 2x3 window; cuBLASLt at every
// precision and the narrow kernel where C·kh·kw fits it (48 and 24 here).
TEST(GemmConvAgreement, PatchEmbeddingsAtOddSizes) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Case {
    std::vector<int64_t> x, kernel, strides;
  };
  for (const Case& c : {Case{{2, 3, 35, 29}, {4, 4}, {4, 4}}, Case{{1, 3, 17, 22}, {3, 3}, {4, 5}},
                        Case{{3, 4, 11, 13}, {2, 3}, {2, 3}}}) {
    SCOPED_TRACE(testing::PrintToString(c.x) + " kernel " + testing::PrintToString(c.kernel));
    const ModelBuilder model = patchEmbedding(c.x, 24, c.kernel, c.strides);
    expectAgreement(model, c.x, {"patch"}, "cublaslt.conv.patch.{}.h0");
    const int64_t patch = c.x[1] * c.kernel[0] * c.kernel[1];
    if (patch % 8 == 0 && patch <= 128)
      expectAgreement(model, c.x, {"patch"}, "kiln.conv.patch.narrow.{}", {Precision::kFP16, Precision::kBF16});
  }
}
