// CPU and CUDA engines agree on int8 and fp8 layers (kiln.QuantizedConv / QuantizedMatMul on
// cuBLASLt's 8-bit products, cuda_quantized.cpp): Q/DQ models as onnxruntime (uint8 asymmetric
// activations, int8 per-channel weights, int32 biases), pytorch-quantization (int8 symmetric) and
// an FP8 export (e4m3) write them, with odd channel counts and depths (padded to 16 on the GPU),
// strided, padded and 1x1 convolutions, a 3-channel 7x7 stem, residuals, and batched matmuls; every
// layer quantized on the GPU. The integer sums are exact on both, so int8 in fp32 agrees to float
// rounding; fp16 engines quantize fp16 inputs. Hopper's fp8 tensor cores do not sum in full fp32
// (their products are exact, the running sum keeps fewer mantissa bits between promotions), so fp8
// differs from the CPU's exact fp32 emulation by about 1e-5 of a value (measured NMSE 1e-9 to
// 2e-8 in fp32, 1e-5 in fp16): fp8 outputs are held to NMSE 1e-7 (fp16: 5e-5).
#include "common/qdq_models.h"
#include "common/residual_block_model.h"
#include "gpu/backend_agreement.h"

#include <kiln/shape.h>

#include <gtest/gtest.h>

#include <kiln/npy.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <iostream>

using namespace kiln;
using kiln::test::ModelBuilder;
using kiln::test::QdqStyle;
using kiln::test::QdqWriter;
using namespace kiln::test::onnx_types;

namespace {

// The NMSE bound of a style's outputs at a precision (see above for fp8).
double toleranceOf(QdqStyle style, Precision precision) {
  if (style != QdqStyle::kFloat8) return 0;  // the harness's: int8 sums are exact
  // fp8: the builder may choose a fast-accumulating product (sums without cuBLASLt's promotions).
  return precision == Precision::kFP32 ? 1e-6 : 5e-5;
}

const char* styleName(QdqStyle style) {
  return style == QdqStyle::kOnnxRuntime ? "onnxruntime uint8" : style == QdqStyle::kSymmetricInt8 ? "int8" : "fp8";
}

void expectQuantizedOnGpu(const test::Agreement& agreement, const std::string& type, int64_t atLeast) {
  int64_t count = 0;
  for (const LayerSummary& l : agreement.gpuLayers)
    if (l.type == type) {
      ++count;
      EXPECT_TRUE(l.precision == "int8" || l.precision == "fp8") << l.name << " is " << l.precision;
      EXPECT_TRUE(l.tactic.rfind("cublaslt.", 0) == 0 || l.tactic.rfind("cudnn.int8conv.", 0) == 0 ||
                  l.tactic.rfind("cudnn.fp8conv.", 0) == 0 || l.tactic.rfind("kiln.int8conv.", 0) == 0 ||
                  l.tactic.rfind("kiln.fp8conv.", 0) == 0)
          << l.name << " ran " << l.tactic;
    }
  EXPECT_GE(count, atLeast) << "quantized layers of type " << type << " on the GPU";
}

// x [N, C, H, W] -> Q/DQ -> Conv (kernel k, stride s, pad k / 2) + bias -> Relu, optionally + a
// residual (the quantized input, dequantized: a float residual) when the shapes allow.
ModelBuilder convModel(QdqStyle style, std::vector<int64_t> x, int64_t outChannels, int64_t kernel, int64_t stride,
                       bool residual) {
  ModelBuilder mb(style == QdqStyle::kFloat8 ? 19 : 17);
  mb.input("x", kFloat, x).output("y");
  QdqWriter q(mb, style);
  const std::string xq = q.activation("x", -2, 2);
  const HostTensor w = test::randomFloats({outChannels, x[1], kernel, kernel}, 41, -0.5f, 0.5f);
  const std::string wq = q.weights("w", w, 0);
  const std::string b = q.bias("b", test::randomFloats({outChannels}, 42), xq, wq);
  auto& conv = mb.node("Conv", {xq, wq, b}, {"c"}, "conv");
  ModelBuilder::setInts(conv, "pads", {kernel / 2, kernel / 2, kernel / 2, kernel / 2});
  ModelBuilder::setInts(conv, "strides", {stride, stride});
  if (residual) {
    mb.node("Add", {"c", "x"}, {"sum"}, "residual");
    mb.node("Relu", {"sum"}, {"y"}, "relu");
  } else {
    mb.node("Relu", {"c"}, {"y"}, "relu");
  }
  return mb;
}

// a [batch, M, K] -> Q/DQ -> MatMul by B [K, N] -> + bias.
ModelBuilder matMulModel(QdqStyle style, std::vector<int64_t> a, int64_t n) {
  ModelBuilder mb(style == QdqStyle::kFloat8 ? 19 : 17);
  mb.input("a", kFloat, a).output("y");
  QdqWriter q(mb, style);
  const std::string aq = q.activation("a", -3, 3);
  const std::string bq = q.weights("b", test::randomFloats({a.back(), n}, 43, -0.3f, 0.3f), 1);
  mb.initializer("bias", test::randomFloats({n}, 44));
  mb.node("MatMul", {aq, bq}, {"m"}, "matmul");
  mb.node("Add", {"m", "bias"}, {"y"}, "bias_add");
  return mb;
}

struct ConvCase {
  std::string name;
  std::vector<int64_t> x;
  int64_t outChannels, kernel, stride;
  bool residual;
};

const std::vector<ConvCase> kConvCases{
    {"3x3 pad 1, 5 -> 7 channels (depth 45 padded to 48)", {2, 5, 9, 11}, 7, 3, 1, false},
    {"3x3 stride 2, 16 -> 24 channels", {1, 16, 13, 12}, 24, 3, 2, false},
    {"1x1, 32 -> 32 channels with a residual", {2, 32, 7, 7}, 32, 1, 1, true},
    {"7x7 stride 2 stem, 3 -> 16 channels (depth 147)", {2, 3, 23, 23}, 16, 7, 2, false},
};

// convModel of `c` in `style` on both backends at `precision` (CUDA layers forced to `tactics`).
test::Agreement convAgreement(QdqStyle style, const ConvCase& c, Precision precision,
                              std::map<std::string, std::string> tactics = {}) {
  const ModelBuilder mb = convModel(style, c.x, c.outChannels, c.kernel, c.stride, c.residual);
  test::AgreementOptions options;
  options.precision = precision;
  options.nmseTolerance = toleranceOf(style, precision);
  options.forcedTactics = std::move(tactics);
  return test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(c.x, 45, -2.5f, 2.5f)}}, options);
}

TEST(QuantizedAgreement, ConvolutionsInEveryStyleAndPrecision) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (QdqStyle style : {QdqStyle::kOnnxRuntime, QdqStyle::kSymmetricInt8, QdqStyle::kFloat8})
    for (const ConvCase& c : kConvCases)
      for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
        SCOPED_TRACE(std::string(styleName(style)) + ", " + c.name + ", " + toString(precision));
        const test::Agreement a = convAgreement(style, c, precision);
        expectQuantizedOnGpu(a, "kiln.QuantizedConv", 1);
        test::expectNoFailedTactics(a);
        std::cout << "[ measured ] " << styleName(style) << " " << c.name << " " << toString(precision) << ": NMSE "
                  << a.worstNmse << "\n";
      }
}

TEST(QuantizedAgreement, MatMulsWithOddDepthsAndBatchDims) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (QdqStyle style : {QdqStyle::kOnnxRuntime, QdqStyle::kSymmetricInt8, QdqStyle::kFloat8})
    for (const auto& [a, n] :
         std::vector<std::pair<std::vector<int64_t>, int64_t>>{{{2, 9, 37}, 29}, {{1, 128, 64}, 48}, {{3, 1, 100}, 3}})
      for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
        SCOPED_TRACE(std::string(styleName(style)) + " " + dimsToString(a) + " x N " + std::to_string(n) + " " +
                     toString(precision));
        test::AgreementOptions options;
        options.precision = precision;
        options.nmseTolerance = toleranceOf(style, precision);
        const test::Agreement agreement = test::expectBackendsAgree(
            matMulModel(style, a, n).bytes(), {{"a", test::randomFloats(a, 46, -3.5f, 3.5f)}}, options);
        expectQuantizedOnGpu(agreement, "kiln.QuantizedMatMul", 1);
        test::expectNoFailedTactics(agreement);
        std::cout << "[ measured ] " << styleName(style) << " matmul " << dimsToString(a) << " x " << n << " "
                  << toString(precision) << ": NMSE " << agreement.worstNmse << "\n";
      }
}

// fp8 products that accumulate fast (Hopper's tensor cores keep the running sums without cuBLASLt's
// promotions to fp32), forced at BERT-base's depths (768 and 3072), fused into fp16 and into fp32
// sums: how far their sums drift from the CPU's exact ones is printed, and bounded.
TEST(QuantizedAgreement, Fp8FastAccumulationAtTransformerDepths) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& [a, n] :
       std::vector<std::pair<std::vector<int64_t>, int64_t>>{{{2, 64, 768}, 3072}, {{1, 129, 3072}, 768}})
    for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
      const std::string tactic =
          precision == Precision::kFP16 ? "cublaslt.fp8gemm.fused.fp16.fa.h0" : "cublaslt.fp8gemm.fp32.fa.h0";
      SCOPED_TRACE(dimsToString(a) + " x N " + std::to_string(n) + " " + tactic);
      test::AgreementOptions options;
      options.precision = precision;
      options.nmseTolerance = precision == Precision::kFP32 ? 1e-5 : 1e-4;
      options.forcedTactics = {{"matmul", tactic}};
      const test::Agreement agreement = test::expectBackendsAgree(
          matMulModel(QdqStyle::kFloat8, a, n).bytes(), {{"a", test::randomFloats(a, 47, -3.5f, 3.5f)}}, options);
      test::expectNoFailedTactics(agreement);
      int ran = 0;
      for (const LayerSummary& l : agreement.gpuLayers) ran += l.tactic == tactic;
      EXPECT_EQ(ran, 1) << "the fast-accumulating product did not run";
      std::cout << "[ measured ] fp8 fast accumulation " << dimsToString(a) << " x " << n << " " << toString(precision)
                << ": NMSE " << agreement.worstNmse << "\n";
    }
}

// Symmetric int8 and fp8 convolutions as cuDNN 8-bit graphs (cuda_quantized_conv_graph.cpp), forced
// over the cuBLASLt form they compete with: sums dequantized in the graph, channels padded to 16 on
// entry (5 and 3 input channels), a residual, in fp32 and fp16 engines. int8 sums are exact and the
// epilogue is the CPU's fp32 arithmetic, so the bound is the harness's; fp8's is the cuBLASLt one's.
TEST(QuantizedAgreement, CudnnInt8GraphConvolutions) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<ConvCase> cases{
      {"3x3 pad 1, 5 -> 16 channels", {2, 5, 9, 11}, 16, 3, 1, false},
      {"3x3 stride 2, 16 -> 48 channels", {1, 16, 13, 12}, 48, 3, 2, false},
      {"1x1, 32 -> 32 channels with a residual", {2, 32, 7, 7}, 32, 1, 1, true},
      {"7x7 stride 2 stem, 3 -> 64 channels", {2, 3, 23, 23}, 64, 7, 2, false},
  };
  for (QdqStyle style : {QdqStyle::kSymmetricInt8, QdqStyle::kFloat8})
    for (const ConvCase& c : cases)
      for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
        SCOPED_TRACE(std::string(styleName(style)) + ", " + c.name + ", " + toString(precision));
        const std::string family = style == QdqStyle::kFloat8 ? "cudnn.fp8conv." : "cudnn.int8conv.";
        const test::Agreement a = convAgreement(style, c, precision, {{"conv", family + toString(precision) + ".c0"}});
        test::expectNoFailedTactics(a);
        for (const LayerSummary& l : a.gpuLayers)
          if (l.type == "kiln.QuantizedConv") EXPECT_EQ(l.tactic.rfind(family, 0), 0u) << l.tactic;
        std::cout << "[ measured ] cuDNN graph " << styleName(style) << " " << c.name << " " << toString(precision)
                  << ": NMSE " << a.worstNmse << "\n";
      }
}

// Two symmetric int8 3x3 convolutions with ReLU in a chain ("conv0", "conv1"; the first writes int8
// by ChainInt8Activations), input "x" of kChainInput's dims: the model's bytes.
const std::vector<int64_t> kChainInput{2, 16, 12, 10};
auto int8ConvChainModel() {
  ModelBuilder mb(17);
  mb.input("x", kFloat, kChainInput).output("y");
  QdqWriter q(mb, QdqStyle::kSymmetricInt8);
  std::string in = "x";
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    const std::string xq = q.activation(in, i == 0 ? -2.0f : 0.0f, 2.0f);
    const std::string wq = q.weights("w" + n, test::randomFloats({32, i == 0 ? 16 : 32, 3, 3}, 50 + i, -0.3f, 0.3f), 0);
    const std::string b = q.bias("b" + n, test::randomFloats({32}, 52 + i), xq, wq);
    auto& conv = mb.node("Conv", {xq, wq, b}, {"c" + n}, "conv" + n);
    ModelBuilder::setInts(conv, "pads", {1, 1, 1, 1});
    mb.node("Relu", {"c" + n}, {i == 1 ? "y" : "r" + n}, "relu" + n);
    in = "r" + n;
  }
  return mb.bytes();
}

// Two symmetric int8 convolutions in a chain: the first writes int8 (ChainInt8Activations) from its
// cuDNN graph (rounded and saturated there) and the second reads it as its operand, NHWC, as it is.
TEST(QuantizedAgreement, CudnnInt8GraphChainPassesInt8Between) {
  KILN_REQUIRE_CUDA_BACKEND();
  const auto model = int8ConvChainModel();
  for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
    SCOPED_TRACE(toString(precision));
    test::AgreementOptions options;
    options.precision = precision;
    const std::string tactic = std::string("cudnn.int8conv.") + toString(precision) + ".c0";
    options.forcedTactics = {{"conv0", tactic}, {"conv1", tactic}};
    // cuDNN multiplies by 1 / y_scale where the CPU divides: a value at a rounding tie may land one
    // int8 step away (measured on the H200: NMSE 1.5e-15 in fp32). An fp16 engine quantizes
    // fp16-rounded values, so some land one step away from the CPU's, and the second int8 layer
    // carries that on: 1.2e-5 measured, held to the fp16 bound of the fp8 layers.
    options.nmseTolerance = precision == Precision::kFP32 ? 1e-6 : 1e-3;
    const test::Agreement a = test::expectBackendsAgree(model, {{"x", test::randomFloats(kChainInput, 54)}}, options);
    test::expectNoFailedTactics(a);
    int64_t graphs = 0;
    for (const LayerSummary& l : a.gpuLayers)
      if (l.type == "kiln.QuantizedConv" && l.tactic.rfind("cudnn.int8conv.", 0) == 0) ++graphs;
    EXPECT_EQ(graphs, 2);
    std::cout << "[ measured ] cuDNN int8 graph chain " << toString(precision) << ": NMSE " << a.worstNmse << "\n";
  }
}

// Symmetric int8 and fp8 convolutions on Kiln's own 8-bit kernel (kernels/cuda/quant/int8_conv.h),
// forced as kiln.int8conv / kiln.fp8conv with each block tile: the graph step's entry quantization
// (5 and 3 channels padded to 16), a residual, a 7x7 stem, more output channels than one tile. int8
// sums are exact and the epilogue is the CPU's arithmetic, so the bound is the harness's; fp8's is
// the cuBLASLt one's.
TEST(QuantizedAgreement, KilnInt8ConvKernel) {
  KILN_REQUIRE_CUDA_BACKEND();
  // The tiles offered: 128x64 (t1), 64x64 (t2) and 256x64 (t3) for up to 64 output channels, also
  // 128x128 (t0) above.
  const std::vector<std::pair<ConvCase, int>> cases{
      {{"3x3 pad 1, 5 -> 16 channels", {2, 5, 9, 11}, 16, 3, 1, false}, 1},
      {{"3x3 stride 2, 16 -> 48 channels", {1, 16, 13, 12}, 48, 3, 2, false}, 2},
      {{"1x1, 32 -> 32 channels with a residual", {2, 32, 7, 7}, 32, 1, 1, true}, 3},
      {{"7x7 stride 2 stem, 3 -> 64 channels", {2, 3, 23, 23}, 64, 7, 2, false}, 2},
      {{"3x3 pad 1, 24 -> 144 channels", {1, 24, 11, 9}, 144, 3, 1, false}, 0},
  };
  for (QdqStyle style : {QdqStyle::kSymmetricInt8, QdqStyle::kFloat8})
    for (const auto& [c, tile] : cases)
      for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
        const std::string family = style == QdqStyle::kFloat8 ? "kiln.fp8conv." : "kiln.int8conv.";
        const std::string tactic = family + toString(precision) + ".t" + std::to_string(tile);
        SCOPED_TRACE(std::string(styleName(style)) + ", " + c.name + ", " + toString(precision) + ", " + tactic);
        const test::Agreement a = convAgreement(style, c, precision, {{"conv", tactic}});
        test::expectNoFailedTactics(a);
        for (const LayerSummary& l : a.gpuLayers)
          if (l.type == "kiln.QuantizedConv") EXPECT_EQ(l.tactic, tactic);
        std::cout << "[ measured ] Kiln 8-bit conv " << styleName(style) << " " << c.name << " " << toString(precision)
                  << " " << tactic << ": NMSE " << a.worstNmse << "\n";
      }
}

// Two symmetric int8 convolutions in a chain on Kiln's kernel: the first writes int8 (divided by its
// y_scale and rounded as the CPU does) and the second reads it as its operand, NHWC, as it is.
TEST(QuantizedAgreement, KilnInt8ConvChainPassesInt8Between) {
  KILN_REQUIRE_CUDA_BACKEND();
  const auto model = int8ConvChainModel();
  for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
    for (int tile : {1, 3}) {
      const std::string tactic = std::string("kiln.int8conv.") + toString(precision) + ".t" + std::to_string(tile);
      SCOPED_TRACE(tactic);
      test::AgreementOptions options;
      options.precision = precision;
      options.forcedTactics = {{"conv0", tactic}, {"conv1", tactic}};
      // fp32: the CPU's own arithmetic (expected exact). fp16: the engine quantizes fp16-rounded
      // values, so some land one int8 step away and the second layer carries that on (as the cuDNN
      // chain's bound).
      options.nmseTolerance = precision == Precision::kFP32 ? 1e-6 : 1e-3;
      const test::Agreement a = test::expectBackendsAgree(model, {{"x", test::randomFloats(kChainInput, 54)}}, options);
      test::expectNoFailedTactics(a);
      int64_t kernels = 0;
      for (const LayerSummary& l : a.gpuLayers)
        if (l.type == "kiln.QuantizedConv" && l.tactic == tactic) ++kernels;
      EXPECT_EQ(kernels, 2);
      std::cout << "[ measured ] Kiln int8 conv chain " << tactic << ": NMSE " << a.worstNmse << "\n";
    }
  }
}

// A ResNet bottleneck (common/residual_block_model.h) whose channels are multiples of 16, so that
// Kiln's kernel takes every layer.
const std::vector<int64_t> kBlockInput{2, 16, 10, 9};

// Both engines calibrated on the same batch (the same scales: calibration runs on the CPU).
std::function<void(BuilderConfig&)> int8CalibratedOn(const std::string& folder) {
  return [folder](BuilderConfig& config) {
    config.allowINT8 = true;
    config.calibration.dataPath = folder;
    config.calibration.calibrator = CalibratorKind::kMinMax;
    config.int8Residuals = true;
  };
}

// conv3 reads its residual b as int8 on the CPU and the GPU (Kiln's kernel for every convolution,
// or cuBLASLt's product and dequantizing epilogue for conv3); cuDNN's graph, which takes float
// residuals only, is not among conv3's candidates. The epilogue is the CPU's arithmetic, so fp32
// agrees to the chain's bound (1e-6; 0 on the H200). In fp16 the engines round their float
// intermediates at different points, and a value at a rounding tie becomes one int8 step apart in
// every int8 tensor after it: five chained convolutions measured NMSE 2.1e-4 on the H200, the same
// for both tactics (a wrong residual scale gives ~1).
TEST(QuantizedAgreement, Int8ResidualBlockOnKilnKernelAndCublasLt) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("kiln_int8_residual_" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  writeNpyFile(test::randomFloats(kBlockInput, 67), (folder / "x.npy").string());
  const auto model = test::residualBlockModel(kBlockInput, 32);
  for (Precision precision : {Precision::kFP32, Precision::kFP16})
    for (const bool cublasLt : {false, true}) {
      const std::string storage = toString(precision);
      test::AgreementOptions options;
      options.precision = precision;
      options.configure = int8CalibratedOn(folder.string());
      options.nmseTolerance = precision == Precision::kFP32 ? 1e-6 : 1e-3;
      const std::string kiln = "kiln.int8conv." + storage + ".t1";
      for (const char* conv : {"conv0", "conv1", "conv2", "conv3", "conv4"}) options.forcedTactics[conv] = kiln;
      if (cublasLt) options.forcedTactics["conv3"] = "cublaslt.int8gemm." + storage + ".h0";
      SCOPED_TRACE(storage + ", conv3 on " + options.forcedTactics["conv3"]);
      const test::Agreement a = test::expectBackendsAgree(model, {{"x", test::randomFloats(kBlockInput, 68)}}, options);
      test::expectNoFailedTactics(a);
      bool sawConv3 = false;
      for (const LayerSummary& l : a.gpuLayers)
        if (l.name == "conv3") {
          sawConv3 = true;
          EXPECT_EQ(l.tactic, options.forcedTactics["conv3"]);
          ASSERT_GT(l.inputs.size(), 3u);
          EXPECT_EQ(l.inputs[3].dtype, "int8");
          for (const TacticCandidate& c : l.tacticCandidates)
            EXPECT_NE(c.tactic.rfind("cudnn.int8conv.", 0), 0u) << "cuDNN's graph offered an int8 residual";
        }
      EXPECT_TRUE(sawConv3);
      std::cout << "[ measured ] int8 residual block " << storage << " conv3 " << options.forcedTactics["conv3"]
                << ": NMSE " << a.worstNmse << "\n";
    }
  std::filesystem::remove_all(folder);
}

// The whole Q/DQ CNN (two convolutions, a max pool between 8-bit tensors, a Gemm): int8 / uint8
// tensors flow between the GPU's quantized layers as they do on the CPU.
TEST(QuantizedAgreement, QdqCnnRunsQuantizedEndToEnd) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (QdqStyle style : {QdqStyle::kOnnxRuntime, QdqStyle::kSymmetricInt8, QdqStyle::kFloat8}) {
    SCOPED_TRACE(styleName(style));
    test::AgreementOptions options;
    options.requireEveryLayerOnGpu = false;
    options.nmseTolerance = toleranceOf(style, Precision::kFP32);
    const test::Agreement a = test::expectBackendsAgree(test::qdqCnn(style).bytes(),
                                                        {{"x", test::randomFloats({2, 3, 10, 10}, 47)}}, options);
    expectQuantizedOnGpu(a, "kiln.QuantizedConv", 2);
    expectQuantizedOnGpu(a, "kiln.QuantizedMatMul", 1);
    std::cout << "[ measured ] " << styleName(style) << " Q/DQ CNN: NMSE " << a.worstNmse << "\n";
  }
}

}  // namespace
