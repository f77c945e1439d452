// The CPU kernels of the fp8 and fp4 quantized layers: NVFP4's block scales and values worked out
// by hand (a partial last block included); kiln.QuantizedConv / QuantizedMatMul of precision fp8
// and fp4 against the float ops run on the operands' fp8 / NVFP4 values; and fp8 QuantizeLinear /
// DequantizeLinear with ONNX's semantics (one rounding, saturation or NaN, NaN kept).
#include <kiln/error.h>
#include <kiln/network.h>
#include <kiln/reference_executor.h>

#include <kernels/cpu/quant/small_float_layers.h>
#include <kernels/cuda/common/small_floats.h>

#include "backends/support/quantized_layer_checks.h"
#include "common/test_models.h"
#include "ops/quantized.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kiln;
using kiln::test::expectClose;
using kiln::test::oneLayer;
using kiln::test::runOne;

namespace {

// x's fp8 values times the scale: what an fp8 layer sees of x.
HostTensor fp8Dequantized(const HostTensor& x, float scale) {
  HostTensor out = x.clone();
  kernels::fp8Values(x.data<float>(), x.elementCount(), scale, out.data<float>());
  for (int64_t i = 0; i < out.elementCount(); ++i) out.data<float>()[i] *= scale;
  return out;
}

// Float weights as float8e4m3 codes with one scale per channel (dim 0 for a Conv, the last for a MatMul).
HostTensor fp8Codes(const HostTensor& w, const std::vector<float>& scales, int64_t inner) {
  HostTensor codes(DataType::kFloat8E4M3, w.dims());
  auto* c = static_cast<uint8_t*>(codes.rawData());
  for (int64_t i = 0; i < w.elementCount(); ++i)
    c[i] = kernels::encodeE4M3(w.data<float>()[i] / scales[size_t(i / inner % int64_t(scales.size()))]);
  return codes;
}

HostTensor fp8Decoded(const HostTensor& codes, const std::vector<float>& scales, int64_t inner) {
  HostTensor out(DataType::kFloat32, codes.dims());
  const auto* c = static_cast<const uint8_t*>(codes.rawData());
  for (int64_t i = 0; i < codes.elementCount(); ++i)
    out.data<float>()[i] = kernels::decodeE4M3(c[i]) * scales[size_t(i / inner % int64_t(scales.size()))];
  return out;
}

// NVFP4 values of x (blocked along `layout`) times the tensor scale.
HostTensor fp4Dequantized(const HostTensor& x, const kernels::BlockedAxis& layout, float tensorScale) {
  HostTensor out = x.clone();
  kernels::nvfp4Values(x.data<float>(), layout, tensorScale, out.data<float>());
  for (int64_t i = 0; i < out.elementCount(); ++i) out.data<float>()[i] *= tensorScale;
  return out;
}

}  // namespace

// Tensor scale 0.5. Block 0 (16 values): amax 3 -> block scale e4m3(3 / (6 * 0.5)) = 1, one e2m1
// step is 0.5: 1 -> 2 (code 4), -2 -> -4 (0xE), 3 -> 6 (7), 0.7 -> 1.4 -> 1.5 (3), 0.25 -> 0.5 ->
// 0.5 (1), 0.375 -> 0.75 -> the tie between 0.5 and 1 goes to 1 (2, even). Block 1 (the last 4):
// amax 0.09375 -> block scale 0.09375 / 3 = 2^-5, step 2^-6: 0.09375 -> 6 (7), -0.017 -> -1.088 -> -1 (0xA).
TEST(Nvfp4Kernel, BlockScalesAndValuesAsWorkedOutByHand) {
  std::vector<float> x(20, 0.0f);
  x[0] = 1, x[1] = -2, x[2] = 3, x[3] = 0.7f, x[4] = 0.25f, x[5] = 0.375f;
  x[16] = 0.09375f, x[17] = -0.017f;
  const kernels::BlockedAxis layout{1, 20, 1, 16};
  ASSERT_EQ(layout.blocks(), 2);
  std::vector<uint8_t> codes(20), scales(2);
  kernels::nvfp4Quantize(x.data(), layout, 0.5f, codes.data(), scales.data());
  EXPECT_EQ(kernels::decodeE4M3(scales[0]), 1.0f);
  EXPECT_EQ(kernels::decodeE4M3(scales[1]), 0.03125f);
  const std::vector<uint8_t> expected = {4, 0xE, 7, 3, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0xA, 0, 0};
  EXPECT_EQ(codes, expected);
  std::vector<float> values(20);
  kernels::nvfp4Decoded(codes.data(), scales.data(), layout, values.data());
  EXPECT_EQ(values[3], 1.5f);
  EXPECT_EQ(values[5], 1.0f);
  EXPECT_EQ(values[16], 6 * 0.03125f);
  EXPECT_EQ(values[17], -0.03125f);
}

// Blocks run along the middle axis: [2, 3, 2] in blocks of 2 has [2, 2, 2] scales, the second
// block of each run one value long.
TEST(Nvfp4Kernel, BlocksRunAlongTheAxisWithTheirOwnScales) {
  const std::vector<float> x = {1, 100, 2, -200, 4, 300, 1, 100, 2, -200, 4, 300};
  const kernels::BlockedAxis layout{2, 3, 2, 2};
  std::vector<uint8_t> codes(12), scales(size_t(layout.scaleCount()));
  ASSERT_EQ(layout.scaleCount(), 8);
  kernels::nvfp4Quantize(x.data(), layout, 1.0f, codes.data(), scales.data());
  // Run (o=0, inner 0): {1, 2 | 4}: scales 2/6 and 4/6; run (o=0, inner 1): {100, -200 | 300}.
  EXPECT_EQ(kernels::decodeE4M3(scales[0]), kernels::decodeE4M3(kernels::encodeE4M3(2.0f / 6)));
  EXPECT_EQ(kernels::decodeE4M3(scales[1]), kernels::decodeE4M3(kernels::encodeE4M3(200.0f / 6)));
  EXPECT_EQ(kernels::decodeE4M3(scales[2]), kernels::decodeE4M3(kernels::encodeE4M3(4.0f / 6)));
  EXPECT_EQ(kernels::decodeE4M3(scales[3]), kernels::decodeE4M3(kernels::encodeE4M3(300.0f / 6)));
  EXPECT_EQ(codes[4], 7) << "4 is its block's largest: 6 steps";
  EXPECT_EQ(codes[5], 7) << "300 too";
}

// Odd sizes, pads, stride, groups, a residual and an activation: fp8 X and W against kiln.FusedConv
// on their fp8 values times the scales (the products of fp8 values are exact in float).
TEST(Fp8ConvKernel, MatchesTheFloatConvolutionOfTheFp8Operands) {
  const float xScale = 0.004f;
  const std::vector<float> wScales = {0.002f, 0.003f, 0.001f, 0.004f, 0.0025f, 0.0015f};
  const HostTensor x = test::randomFloats({2, 4, 9, 7}, 11, -1.5f, 1.8f);
  const HostTensor w = fp8Codes(test::randomFloats({6, 2, 3, 3}, 12, -0.5f, 0.5f), wScales, 2 * 3 * 3);
  test::expectQuantizedConvMatches("fp8", x, w, xScale, wScales, fp8Dequantized(x, xScale),
                                   fp8Decoded(w, wScales, 2 * 3 * 3));
}

// fp4: X blocked along each group's 16 input channels at every pixel (here 20 channels a group:
// blocks of 16 and 4), W along its input channels at every kernel position.
TEST(Fp4ConvKernel, MatchesTheFloatConvolutionOfTheNvfp4Operands) {
  const float xScale = 2.5f / (6 * 448), wScale = 0.6f / (6 * 448);
  const HostTensor x = test::randomFloats({2, 40, 5, 4}, 31, -2.0f, 2.5f);
  const HostTensor wFloat = test::randomFloats({6, 20, 3, 3}, 32, -0.6f, 0.6f);
  const kernels::BlockedAxis wLayout{6, 20, 9, 16};
  HostTensor codes(DataType::kUInt8, wFloat.dims()), blocks(DataType::kFloat8E4M3, {6, 2, 3, 3});
  kernels::nvfp4Quantize(wFloat.data<float>(), wLayout, wScale, codes.data<uint8_t>(),
                         static_cast<uint8_t*>(blocks.rawData()));
  Network q;
  q.addConstant("w", codes);
  q.addConstant("wb", blocks);
  q.addConstant("xs", HostTensor::scalar<float>(xScale));
  q.addConstant("ws", HostTensor::scalar<float>(wScale));
  Layer conv = oneLayer(quantized::kQuantizedConv, {"x", "w", "", "", "xs", "ws", "", "", "", "", "wb"}, "fp4");
  conv.attributes[fused::kBase] = std::string("Conv");
  conv.attributes["group"] = int64_t(2);
  conv.attributes["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  q.addLayer(conv);
  const HostTensor actual = runOne(q, {{"x", x}});

  Network f;
  f.addConstant("w", fp4Dequantized(wFloat, wLayout, wScale));
  Layer reference = oneLayer("Conv", {"x", "w"});
  reference.attributes["group"] = int64_t(2);
  reference.attributes["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  f.addLayer(reference);
  expectClose(actual, runOne(f, {{"x", fp4Dequantized(x, {2 * 2, 20, 5 * 4, 16}, xScale)}}));
}

// Batched A [2, 3, 20] by fp8 weights [20, 4] per column with a bias; by fp4 weights [20, 4]; and
// by a float B [2, 20, 4] quantized on entry (fp8 per tensor, fp4 in blocks along K).
TEST(SmallFloatMatMulKernel, MatchesTheFloatMatMulOfTheQuantizedOperands) {
  const float aScale = 0.003f, bScale = 0.002f;
  const std::vector<float> columnScales = {0.001f, 0.002f, 0.0015f, 0.0025f};
  const HostTensor a = test::randomFloats({2, 3, 20}, 21, -1.0f, 1.3f);
  const HostTensor bFloat = test::randomFloats({20, 4}, 22, -0.4f, 0.4f);
  const HostTensor bias = test::randomFloats({4}, 23);
  {
    const HostTensor b = fp8Codes(bFloat, columnScales, 1);
    Network q;
    q.addConstant("b", b);
    q.addConstant("c", bias);
    q.addConstant("as", HostTensor::scalar<float>(aScale));
    q.addConstant("bs", HostTensor::fromVector<float>({4}, columnScales));
    q.addLayer(oneLayer(quantized::kQuantizedMatMul, {"a", "b", "c", "", "as", "bs"}, "fp8"));
    Network f;
    f.addConstant("b", fp8Decoded(b, columnScales, 1));
    f.addConstant("c", bias);
    Layer reference = oneLayer(fused::kFusedMatMul, {"a", "b", "c"});
    reference.attributes[fused::kBase] = std::string("MatMul");
    f.addLayer(reference);
    expectClose(runOne(q, {{"a", a}}), runOne(f, {{"a", fp8Dequantized(a, aScale)}}));
  }
  const float aTensorScale = 1.3f / (6 * 448), bTensorScale = 0.4f / (6 * 448);
  {
    const kernels::BlockedAxis bLayout{1, 20, 4, 16};
    HostTensor codes(DataType::kUInt8, {20, 4}), blocks(DataType::kFloat8E4M3, {2, 4});
    kernels::nvfp4Quantize(bFloat.data<float>(), bLayout, bTensorScale, codes.data<uint8_t>(),
                           static_cast<uint8_t*>(blocks.rawData()));
    Network q;
    q.addConstant("b", codes);
    q.addConstant("bb", blocks);
    q.addConstant("as", HostTensor::scalar<float>(aTensorScale));
    q.addConstant("bs", HostTensor::scalar<float>(bTensorScale));
    q.addLayer(oneLayer(quantized::kQuantizedMatMul, {"a", "b", "", "", "as", "bs", "", "", "", "", "bb"}, "fp4"));
    Network f;
    f.addConstant("b", fp4Dequantized(bFloat, bLayout, bTensorScale));
    f.addLayer(oneLayer("MatMul", {"a", "b"}));
    expectClose(runOne(q, {{"a", a}}), runOne(f, {{"a", fp4Dequantized(a, {6, 20, 1, 16}, aTensorScale)}}));
  }
  const HostTensor bActivation = test::randomFloats({2, 20, 4}, 25, -0.6f, 0.5f);
  for (const char* precision : {"fp8", "fp4"}) {
    SCOPED_TRACE(precision);
    const bool fp4 = precision == std::string("fp4");
    const float as = fp4 ? aTensorScale : aScale, bs = fp4 ? 0.6f / (6 * 448) : bScale;
    Network q;
    q.addConstant("as", HostTensor::scalar<float>(as));
    q.addConstant("bs", HostTensor::scalar<float>(bs));
    q.addLayer(oneLayer(quantized::kQuantizedMatMul, {"a", "b", "", "", "as", "bs"}, precision));
    Network f;
    f.addLayer(oneLayer("MatMul", {"a", "b"}));
    const HostTensor aRef = fp4 ? fp4Dequantized(a, {6, 20, 1, 16}, as) : fp8Dequantized(a, as);
    const HostTensor bRef = fp4 ? fp4Dequantized(bActivation, {2, 20, 4, 16}, bs) : fp8Dequantized(bActivation, bs);
    expectClose(runOne(q, {{"a", a}, {"b", bActivation}}), runOne(f, {{"a", aRef}, {"b", bRef}}));
  }
}

TEST(SmallFloatLayers, WrongWeightTypesAndUnknownPrecisionsAreRefusedByInference) {
  for (const char* precision : {"fp8", "fp4", "fp6"}) {
    SCOPED_TRACE(precision);
    Network network;
    network.addConstant("w", HostTensor::fromVector<int8_t>({2, 2, 1, 1}, {1, 2, 3, 4}));
    network.addConstant("xs", HostTensor::scalar<float>(0.5f));
    network.addConstant("ws", HostTensor::scalar<float>(0.5f));
    Layer conv = oneLayer(quantized::kQuantizedConv, {"x", "w", "", "", "xs", "ws"}, precision);
    conv.attributes[fused::kBase] = std::string("Conv");
    network.addLayer(conv);
    try {
      runOne(network, {{"x", test::randomFloats({1, 2, 2, 2}, 2)}});
      ADD_FAILURE() << "int8 weights ran in an " << precision << " layer";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(precision == std::string("fp6") ? "must be int8, fp8 or fp4" : "weights"),
                std::string::npos)
          << e.what();
    }
  }
}

// x / 2 rounded once into e4m3: 3 -> 1.5, 1000 -> 500 -> 448 saturated (896 back), -0.3 -> -0.15 ->
// its nearest e4m3; NaN stays NaN; with saturate=0, 1000 overflows to NaN.
TEST(Fp8QuantizeLinear, RoundsOnceSaturatesAndKeepsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int saturate : {1, 0}) {
    SCOPED_TRACE(saturate);
    Network network;
    network.addConstant("s", HostTensor::scalar<float>(2.0f));
    HostTensor zero(DataType::kFloat8E4M3, {});
    *static_cast<uint8_t*>(zero.rawData()) = 0;
    network.addConstant("z", zero);
    Layer q = oneLayer("QuantizeLinear", {"x", "s", "z"});
    q.outputs = {"q"};
    q.attributes["saturate"] = int64_t(saturate);
    network.addLayer(q);
    network.addLayer(oneLayer("DequantizeLinear", {"q", "s", "z"}));
    const HostTensor y = runOne(network, {{"x", HostTensor::fromVector<float>({4}, {3.0f, 1000.0f, -0.3f, nan})}});
    EXPECT_EQ(y.data<float>()[0], 3.0f);
    if (saturate) EXPECT_EQ(y.data<float>()[1], 896.0f);
    else EXPECT_TRUE(std::isnan(y.data<float>()[1]));
    EXPECT_EQ(y.data<float>()[2], kernels::decodeE4M3(kernels::encodeE4M3(-0.15f)) * 2.0f);
    EXPECT_NE(y.data<float>()[2], -0.3f) << "-0.15 is no e4m3 value";
    EXPECT_TRUE(std::isnan(y.data<float>()[3]));
  }
}
