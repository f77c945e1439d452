// FuseConvMaxPool: a few-channel (Fused)Conv read only by a MaxPool becomes one kiln.FusedConvPool
// in CUDA builds, and the CPU's kernel for it (the FusedConv, then the MaxPool) gives the unfused
// outputs: ResNet's stem shape on an odd map, ceil mode, a plain Conv; nothing fused for the CPU
// backend, for 16 input channels or when the convolution's output has a second reader.
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

struct Spec {
  int64_t channels = 3, kernel = 7, stride = 2, pad = 3;
  bool relu = true;
  int64_t poolKernel = 3, poolStride = 2, poolPad = 1;
  bool ceil = false, secondReader = false;
};

ModelBuilder stemModel(const Spec& s, const std::vector<int64_t>& x) {
  ModelBuilder mb(17);
  mb.input("x", F, x);
  mb.initializer("w", randomFloats({16, s.channels, s.kernel, s.kernel}, 31));
  mb.initializer("b", randomFloats({16}, 32));
  auto& conv = mb.node("Conv", {"x", "w", "b"}, {"conv"}, "stem");
  ModelBuilder::setInts(conv, "strides", {s.stride, s.stride});
  ModelBuilder::setInts(conv, "pads", {s.pad, s.pad, s.pad, s.pad});
  std::string pooled = "conv";
  if (s.relu) {
    mb.node("Relu", {"conv"}, {"act"}, "relu");
    pooled = "act";
  }
  auto& pool = mb.node("MaxPool", {pooled}, {"y"}, "pool");
  ModelBuilder::setInts(pool, "kernel_shape", {s.poolKernel, s.poolKernel});
  ModelBuilder::setInts(pool, "strides", {s.poolStride, s.poolStride});
  ModelBuilder::setInts(pool, "pads", {s.poolPad, s.poolPad, s.poolPad, s.poolPad});
  if (s.ceil) ModelBuilder::setInt(pool, "ceil_mode", 1);
  mb.output("y");
  if (s.secondReader) {
    mb.node("Identity", {pooled}, {"z"}, "second");
    mb.output("z");
  }
  return mb;
}

Optimized fuse(const ModelBuilder& mb, BackendKind backend, bool halfPrecision = true) {
  PassManager manager;
  manager.add(createFuseConvEpiloguePass());
  manager.add(createFuseConvMaxPoolPass());
  PassContext context;
  context.backend = backend;
  context.halfPrecision = halfPrecision;
  return optimize(mb, std::move(manager), std::move(context));
}

}  // namespace

TEST(FuseConvMaxPool, ResNetStemOnAnOddMap) {
  auto run = fuse(stemModel({}, {2, 3, 29, 23}), BackendKind::kCuda);
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedConvPool", 1}}));
  const Layer& fused = onlyLayer(*run.optimized, "kiln.FusedConvPool");
  EXPECT_EQ(fused.attrString("activation"), "Relu");
  EXPECT_EQ(fused.attrInts("pool_kernel_shape"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(fused.outputs, std::vector<std::string>{"y"});
  expectSameOutputs(run);
}

TEST(FuseConvMaxPool, CeilModeAndAPlainConv) {
  Spec s;
  s.channels = 8, s.kernel = 3, s.stride = 1, s.pad = 1, s.relu = false, s.poolPad = 0, s.ceil = true;
  auto run = fuse(stemModel(s, {1, 8, 12, 9}), BackendKind::kCuda);
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedConvPool", 1}}));
  expectSameOutputs(run);
}

TEST(FuseConvMaxPool, LeavesOtherConvolutionsAlone) {
  EXPECT_EQ(countOf(*fuse(stemModel({}, {1, 3, 16, 16}), BackendKind::kCpu).optimized, "kiln.FusedConvPool"), 0);
  // A build without fp16 / bf16 (TF32): the convolution stays on cuDNN's channels-last graph.
  EXPECT_EQ(countOf(*fuse(stemModel({}, {1, 3, 16, 16}), BackendKind::kCuda, false).optimized, "kiln.FusedConvPool"),
            0);
  Spec wide;
  wide.channels = 16;
  EXPECT_EQ(countOf(*fuse(stemModel(wide, {1, 16, 16, 16}), BackendKind::kCuda).optimized, "kiln.FusedConvPool"), 0);
  Spec read;
  read.secondReader = true;
  EXPECT_EQ(countOf(*fuse(stemModel(read, {1, 3, 16, 16}), BackendKind::kCuda).optimized, "kiln.FusedConvPool"), 0);
}
