// kiln.Pointwise's NVRTC tactic without a GPU (backends/cuda/ops/pointwise_*): bodies generate
// and compile to non-empty cubins for sm_80 and sm_90, identical sources compile once, bodies with
// what the generator lacks are refused naming it, payloads for another GPU or damaged ones are
// refused with the rebuild hint, and the launch plan picks the packed kernel (dense, scalar,
// channels-last per-channel) or the general one with the right strides.
#include "backends/cuda/ops/pointwise_codegen.h"
#include "backends/cuda/ops/pointwise_launch.h"
#include "backends/cuda/ops/pointwise_nvrtc.h"
#include "cuda_plans/pointwise_bodies.h"

#include <kiln/error.h>
#include <kiln/network.h>
#include <kiln/shape.h>

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::cuda;

namespace {

using test::BodyBuilder;

Network deepBody(DataType type) { return test::swishGeluHardSwishBody(2, 7).done("out", type); }

PointwiseKernel generated(const Network& body) {
  PointwiseCodegen g = generatePointwiseKernel(body);
  EXPECT_TRUE(g.kernel) << g.refusal;
  return g.kernel ? *g.kernel : PointwiseKernel{};
}

TEST(PointwiseNvrtc, DeepBodyCompilesForAmpereAndHopper) {
  for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(toString(type));
    const PointwiseKernel kernel = generated(deepBody(type));
    ASSERT_EQ(kernel.inputs.size(), 3u);  // x, y and the 7-element bias; k is a literal
    EXPECT_EQ(kernel.inputs[2].constant != nullptr, true);
    EXPECT_EQ(kernel.pack, type == DataType::kFloat32 ? 4 : 8);
    EXPECT_NE(kernel.source.find("tanhf("), std::string::npos);
    EXPECT_NE(kernel.source.find("0x3fa00000u"), std::string::npos) << "1.25 as a literal";
    for (int arch : {80, 90}) EXPECT_FALSE(compileCubin(kernel.source, arch)->empty()) << "sm_" << arch;
  }
}

TEST(PointwiseNvrtc, EveryOpFamilyCompiles) {
  // A body per family, each compiled for sm_90.
  std::vector<Network> bodies;
  bodies.push_back(BodyBuilder()
                       .input("a", {3, 5})
                       .input("b", {5})
                       .layer("Sub", {"a", "b"}, "d")
                       .layer("Div", {"d", "b"}, "q")
                       .layer("Pow", {"q", "b"}, "p")
                       .layer("Max", {"p", "a", "b"}, "mx")
                       .layer("Min", {"mx", "a"}, "mn")
                       .layer("Relu", {"mn"}, "r")
                       .layer("Exp", {"r"}, "e")
                       .layer("Log", {"e"}, "l")
                       .layer("Sqrt", {"l"}, "sq")
                       .layer("Reciprocal", {"sq"}, "rc")
                       .layer("Abs", {"rc"}, "ab")
                       .layer("Neg", {"ab"}, "ng")
                       .layer("Erf", {"ng"}, "er")
                       .layer("Gelu", {"er"}, "out", {}, 20)
                       .done("out"));
  bodies.push_back(BodyBuilder()
                       .input("a", {4, 1, 3, 3})
                       .input("slope", {1, 1, 1})
                       .layer("HardSigmoid", {"a"}, "hs", {{"alpha", 0.2f}, {"beta", 0.5f}})
                       .layer("LeakyRelu", {"hs"}, "lr", {{"alpha", 0.1f}})
                       .layer("Elu", {"lr"}, "el")
                       .layer("Selu", {"el"}, "se")
                       .layer("Celu", {"se"}, "ce")
                       .layer("Softplus", {"ce"}, "sp")
                       .layer("Floor", {"sp"}, "fl")
                       .layer("Ceil", {"fl"}, "cl")
                       .layer("Round", {"cl"}, "rd")
                       .layer("Sign", {"rd"}, "sg")
                       .layer("Sin", {"sg"}, "sn")
                       .layer("Cos", {"sn"}, "cs")
                       .layer("PRelu", {"cs", "slope"}, "pr")
                       .layer("Tanh", {"pr"}, "out")
                       .done("out", DataType::kFloat16));
  bodies.push_back(BodyBuilder()
                       .input("a", {6})
                       .input("b", {6})
                       .constant("lo", HostTensor::scalar<float>(-0.5f))
                       .constant("hi", HostTensor::scalar<float>(0.5f))
                       .layer("Less", {"a", "b"}, "less")
                       .layer("Not", {"less"}, "not")
                       .layer("Where", {"not", "a", "b"}, "w")
                       .layer("Clip", {"w", "lo", "hi"}, "c")
                       .layer("Cast", {"c"}, "h", {{"to", int64_t(10)}})  // to float16
                       .layer("Cast", {"h"}, "out", {{"to", int64_t(1)}})
                       .done("out", DataType::kBFloat16));
  for (const Network& body : bodies) {
    const PointwiseKernel kernel = generated(body);
    EXPECT_FALSE(compileCubin(kernel.source, 90)->empty()) << kernel.source;
  }
}

TEST(PointwiseNvrtc, IdenticalSourcesCompileOnce) {
  const std::string source = generated(deepBody(DataType::kFloat16)).source + "// once\n";
  const uint64_t before = nvrtcCompileCount();
  const auto first = compileCubin(source, 90);
  const auto second = compileCubin(source, 90);
  EXPECT_EQ(nvrtcCompileCount(), before + 1);
  EXPECT_EQ(first.get(), second.get());
  compileCubin(source, 80);  // another architecture is another key
  EXPECT_EQ(nvrtcCompileCount(), before + 2);
}

TEST(PointwiseNvrtc, RefusesWhatItLacksNamingIt) {
  const PointwiseCodegen integer = generatePointwiseKernel(BodyBuilder()
                                                               .input("a", {4}, DataType::kInt32)
                                                               .input("b", {4}, DataType::kInt32)
                                                               .layer("Add", {"a", "b"}, "s")
                                                               .layer("Abs", {"s"}, "out")
                                                               .done("out"));
  EXPECT_FALSE(integer.kernel);
  EXPECT_NE(integer.refusal.find("int32"), std::string::npos) << integer.refusal;

  const PointwiseCodegen shift = generatePointwiseKernel(
      BodyBuilder().input("a", {4}).layer("Relu", {"a"}, "r").layer("Softmax", {"r"}, "out").done("out"));
  EXPECT_FALSE(shift.kernel);
  EXPECT_NE(shift.refusal.find("Softmax"), std::string::npos) << shift.refusal;
}

TEST(PointwiseNvrtc, PayloadRoundTripsAndRefusesOtherGpusAndDamage) {
  PointwisePayload payload;
  payload.arch = 90;
  payload.nvrtcVersion = uint32_t(nvrtcVersionNumber());
  payload.sourceHash = 0x1234;
  payload.options = "--gpu-architecture=sm_90 -std=c++17";
  payload.kernels = "a,b,c";
  payload.cubin = {1, 2, 3, 4, 5};
  const std::vector<uint8_t> bytes = encodePointwisePayload(payload);
  const PointwisePayload back = decodePointwisePayload(bytes, 90, "node 'p'");
  EXPECT_EQ(back.sourceHash, payload.sourceHash);
  EXPECT_EQ(back.options, payload.options);
  EXPECT_EQ(back.kernels, payload.kernels);
  EXPECT_EQ(back.cubin, payload.cubin);

  auto refusal = [](const std::vector<uint8_t>& b, int arch) {
    try {
      decodePointwisePayload(b, arch, "node 'p'");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string otherGpu = refusal(bytes, 80);
  EXPECT_NE(otherGpu.find("sm_90"), std::string::npos) << otherGpu;
  EXPECT_NE(otherGpu.find("sm_80"), std::string::npos) << otherGpu;
  EXPECT_NE(otherGpu.find("rebuild the plan on this GPU"), std::string::npos) << otherGpu;
  for (size_t cut : {size_t(0), size_t(3), size_t(10), bytes.size() - 1}) {
    const std::string truncated = refusal(std::vector<uint8_t>(bytes.begin(), bytes.begin() + cut), 90);
    EXPECT_NE(truncated.find("node 'p'"), std::string::npos) << truncated;
    EXPECT_NE(truncated.find("rebuild the plan on this GPU"), std::string::npos) << truncated;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_NE(refusal(longer, 90).find("damaged"), std::string::npos);
}

const void* at(uintptr_t address) { return reinterpret_cast<const void*>(address); }

TEST(PointwiseNvrtc, LaunchPlanPicksPackedOrGeneralKernels) {
  constexpr uintptr_t kBase = 0x10000;
  // Dense and scalar: packed, a tail of 1023 % 8 elements.
  PointwiseLaunch dense = planPointwiseLaunch(
      {{{1023}, false, at(kBase), DataType::kFloat16}, {{1}, false, at(kBase + 4096), DataType::kFloat16}},
      {{1023}, false, at(kBase + 8192), DataType::kFloat16}, 8, "l");
  EXPECT_EQ(dense.kernel, PointwiseKernelChoice::kPacked);
  EXPECT_EQ(dense.params.modes, (std::vector<int64_t>{kPointwiseDense, kPointwiseScalar}));
  EXPECT_EQ(dense.threads, 1023 / 8 + 1023 % 8);

  // Channels-last feature map times a per-channel [N, C, 1, 1] scale: packed per channel.
  PointwiseLaunch se = planPointwiseLaunch({{{2, 16, 5, 3}, true, at(kBase), DataType::kFloat16},
                                            {{2, 16, 1, 1}, false, at(kBase + 4096), DataType::kFloat16}},
                                           {{2, 16, 5, 3}, true, at(kBase + 8192), DataType::kFloat16}, 8, "l");
  EXPECT_EQ(se.kernel, PointwiseKernelChoice::kPacked);
  EXPECT_EQ(se.params.modes, (std::vector<int64_t>{kPointwiseDense, kPointwisePerChannel}));
  EXPECT_EQ(se.params.channels, 16);
  EXPECT_EQ(se.params.imageSize, 5 * 3 * 16);
  EXPECT_EQ(se.params.batchStrides[1], 16);

  // 12 channels are no whole packs of 8: the general kernel, strides over [N, H, W, C].
  PointwiseLaunch odd = planPointwiseLaunch(
      {{{2, 12, 5, 3}, true, at(kBase), DataType::kFloat16}, {{12, 1, 1}, false, at(kBase + 4096), DataType::kFloat16}},
      {{2, 12, 5, 3}, true, at(kBase + 8192), DataType::kFloat16}, 8, "l");
  EXPECT_EQ(odd.kernel, PointwiseKernelChoice::kGeneral32);
  // [N, H*W, C] after merging H and W; the feature map is contiguous: one axis.
  EXPECT_EQ(odd.params.dims, (std::vector<int64_t>{2 * 15, 12}));
  EXPECT_EQ(odd.params.strides[0], (std::vector<int64_t>{12, 1}));
  EXPECT_EQ(odd.params.strides[1], (std::vector<int64_t>{0, 1}));

  // General broadcast [3,1,6] x [1,5,1] -> [3,5,6].
  PointwiseLaunch outer = planPointwiseLaunch(
      {{{3, 1, 6}, false, at(kBase), DataType::kFloat32}, {{1, 5, 1}, false, at(kBase + 4096), DataType::kFloat32}},
      {{3, 5, 6}, false, at(kBase + 8192), DataType::kFloat32}, 4, "l");
  EXPECT_EQ(outer.kernel, PointwiseKernelChoice::kGeneral32);
  EXPECT_EQ(outer.params.dims, (std::vector<int64_t>{3, 5, 6}));
  EXPECT_EQ(outer.params.strides[0], (std::vector<int64_t>{6, 0, 1}));
  EXPECT_EQ(outer.params.strides[1], (std::vector<int64_t>{0, 1, 0}));

  // A channels-last input into a linear output: its strides permuted, never "dense".
  PointwiseLaunch mixed = planPointwiseLaunch({{{1, 3, 2, 2}, true, at(kBase), DataType::kFloat32}},
                                              {{1, 3, 2, 2}, false, at(kBase + 4096), DataType::kFloat32}, 4, "l");
  EXPECT_EQ(mixed.kernel, PointwiseKernelChoice::kGeneral32);
  EXPECT_EQ(mixed.params.dims, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(mixed.params.strides[0], (std::vector<int64_t>{1, 3}));

  // Misaligned pointers leave the packed kernel.
  EXPECT_NE(planPointwiseLaunch({{{64}, false, at(kBase + 2), DataType::kFloat16}},
                                {{64}, false, at(kBase + 8192), DataType::kFloat16}, 8, "l")
                .kernel,
            PointwiseKernelChoice::kPacked);
  EXPECT_THROW(planPointwiseLaunch({{{4}, false, at(kBase), DataType::kFloat32}},
                                   {{5}, false, at(kBase), DataType::kFloat32}, 4, "l"),
               Error);
}

}  // namespace
