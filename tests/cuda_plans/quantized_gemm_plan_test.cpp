// The CUDA backend's int8 planning (backends/cuda/ops/quantized_gemm_plan.h) run on the host: the
// weights re-ordered into the product's [N, K] operand (im2col order, dims padded to 16), the
// activation quantized into the operand as kernels/cuda/quant/quantized_gemm.h documents it (uint8
// as q - 128, padding at the quantized zero), the integer product, the zero-point corrections and
// the per-channel multipliers: the result must be the CPU's int8 convolution / matmul exactly.
#include "backends/common/conv_geometry.h"
#include "backends/cuda/cublaslt_matmul.h"
#include "backends/cuda/ops/quantized_gemm_plan.h"
#include "ops/fused.h"
#include "ops/quantized.h"

#include <kernels/cpu/quant/int8_layers.h>
#include <kernels/cuda/quant/quant_math.h>
#include <kiln/error.h>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <iostream>
#include <random>

using namespace kiln;
using namespace kiln::cuda;
namespace k = kiln::kernels;

namespace {

// How the test quantizes X: int8 or uint8 with a zero point.
struct Activation {
  std::string name;
  DataType type;
  int zero;
};

const std::vector<Activation> kActivations{{"int8 symmetric", DataType::kInt8, 0},
                                           {"int8 zero -5", DataType::kInt8, -5},
                                           {"uint8 zero 37", DataType::kUInt8, 37}};

std::vector<float> randomFloats(int64_t count, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}

HostTensor randomWeights(std::vector<int64_t> dims, uint32_t seed) {
  HostTensor w(DataType::kInt8, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-127, 127);
  for (int64_t i = 0; i < w.elementCount(); ++i) w.data<int8_t>()[i] = int8_t(dist(rng));
  return w;
}

HostTensor zeroPoint(const Activation& a) {
  return a.type == DataType::kUInt8 ? HostTensor::scalar<uint8_t>(uint8_t(a.zero))
                                    : HostTensor::scalar<int8_t>(int8_t(a.zero));
}

// q - zero of each float, by QuantizeLinear's rule into the activation's type.
std::vector<int16_t> centered(const std::vector<float>& x, float scale, const Activation& a) {
  std::vector<int16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = a.type == DataType::kUInt8
                 ? int16_t(int(k::cuda::quantizeToInteger<uint8_t>(x[i], scale, uint8_t(a.zero))) - a.zero)
                 : int16_t(int(k::cuda::quantizeToInteger<int8_t>(x[i], scale, int8_t(a.zero))) - a.zero);
  return out;
}

// The operand value of one float, as quantized_gemm.h states it.
int operandOf(float x, const k::cuda::OperandQuantization& q) {
  if (q.unsignedQ) return int(k::cuda::quantizeToInteger<uint8_t>(x, q.scale, uint8_t(q.zero))) - 128;
  return int(k::cuda::quantizeToInteger<int8_t>(x, q.scale, int8_t(q.zero)));
}

// The step's product and epilogue on the host: sums of operand x W', corrected and dequantized.
float dequantized(const QuantizedGemmPlan& plan, const std::vector<int>& operandRow, int64_t n) {
  int32_t sum = 0;
  for (int64_t kk = 0; kk < plan.paddedDepth; ++kk)
    sum += operandRow[size_t(kk)] * int8_t(plan.weights[size_t(n * plan.paddedDepth + kk)]);
  if (!plan.correction.empty()) sum += plan.correction[size_t(n)];
  float v = float(sum) * plan.multipliers[size_t(n)];
  if (!plan.bias.empty()) v += plan.bias[size_t(n)];
  return v;
}

struct ConvCase {
  std::string name;
  std::vector<int64_t> x, w;
  int64_t stride, pad;
};

TEST(QuantizedGemmPlan, ConvolutionsMatchTheCpuInt8Convolution) {
  const std::vector<ConvCase> cases{{"3x3 pad 1, 5 -> 7 channels", {2, 5, 6, 7}, {7, 5, 3, 3}, 1, 1},
                                    {"3x3 stride 2 pad 1, 16 -> 20", {1, 16, 9, 8}, {20, 16, 3, 3}, 2, 1},
                                    {"1x1, 32 -> 17", {2, 32, 4, 3}, {17, 32, 1, 1}, 1, 0},
                                    {"7x7 stride 2 pad 3, 3 -> 16", {1, 3, 11, 11}, {16, 3, 7, 7}, 2, 3}};
  for (const ConvCase& c : cases)
    for (const Activation& a : kActivations) {
      SCOPED_TRACE(c.name + ", " + a.name);
      Layer layer;
      layer.name = "qconv";
      layer.domain = fused::kDomain;
      layer.opType = quantized::kQuantizedConv;
      layer.attributes[fused::kBase] = std::string("Conv");
      layer.attributes["pads"] = std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad};
      layer.attributes["strides"] = std::vector<int64_t>{c.stride, c.stride};
      layer.inputs = {"x", "w", "b", "", "x_scale", "w_scale", "x_zero"};
      layer.outputs = {"y"};
      const float xScale = 0.02f;
      const HostTensor w = randomWeights(c.w, 3);
      const std::vector<float> wScales = randomFloats(c.w[0], 4, 0.001f, 0.01f);
      const std::vector<float> bias = randomFloats(c.w[0], 5, -1, 1);
      const HostTensor xs = HostTensor::scalar<float>(xScale), ws = HostTensor::fromVector<float>({c.w[0]}, wScales);
      const HostTensor b = HostTensor::fromVector<float>({c.w[0]}, bias), zero = zeroPoint(a);
      const LayerWeights weights{nullptr, &w, &b, nullptr, &xs, &ws, &zero};
      const QuantizedGemmPlan plan = planQuantizedGemm(layer, weights, DataType::kFloat32);
      EXPECT_EQ(plan.paddedDepth % kQuantizedGemmAlignment, 0);
      EXPECT_EQ(plan.paddedChannels % kQuantizedGemmAlignment, 0);
      EXPECT_EQ(plan.correction.empty(), a.type == DataType::kInt8 && a.zero == 0);

      const kernels::ConvShape shape = forwardConvShape(fused::baseLayer(layer), c.x, c.w);
      const std::vector<float> x = randomFloats(c.x[0] * c.x[1] * c.x[2] * c.x[3], 6, -3, 3);
      std::vector<float> want(size_t(shape.batch * shape.outChannels * shape.window.outSize()));
      const std::vector<int16_t> cx = centered(x, xScale, a);
      k::int8Convolution(shape, cx.data(), xScale, w.data<int8_t>(), wScales.data(), c.w[0], bias.data(), k::Epilogue{},
                         want.data());

      // im2col rows (n, oh, ow), columns (kh, kw, c), padding at the quantized zero.
      const int64_t channels = c.x[1], inH = c.x[2], inW = c.x[3], kh = c.w[2], kw = c.w[3];
      const int64_t outH = shape.window.out[1], outW = shape.window.out[2], plane = outH * outW;
      for (int64_t n = 0; n < c.x[0]; ++n)
        for (int64_t p = 0; p < plane; ++p) {
          std::vector<int> row(size_t(plan.paddedDepth), 0);
          for (int64_t t = 0; t < kh * kw; ++t)
            for (int64_t ch = 0; ch < channels; ++ch) {
              const int64_t ih = (p / outW) * c.stride - c.pad + t / kw, iw = (p % outW) * c.stride - c.pad + t % kw;
              const bool inside = ih >= 0 && ih < inH && iw >= 0 && iw < inW;
              row[size_t(t * channels + ch)] =
                  inside ? operandOf(x[size_t(((n * channels + ch) * inH + ih) * inW + iw)], plan.activation)
                         : plan.activation.paddingValue();
            }
          for (int64_t m = 0; m < c.w[0]; ++m)
            ASSERT_EQ(dequantized(plan, row, m), want[size_t((n * c.w[0] + m) * plane + p)])
                << "image " << n << " pixel " << p << " channel " << m;
        }
    }
}

TEST(QuantizedGemmPlan, MatMulsMatchTheCpuIntegerProduct) {
  for (const Activation& a : kActivations) {
    SCOPED_TRACE(a.name);
    const int64_t rows = 5, depth = 37, columns = 29;
    Layer layer;
    layer.name = "qmatmul";
    layer.domain = fused::kDomain;
    layer.opType = quantized::kQuantizedMatMul;
    layer.inputs = {"a", "b", "", "", "a_scale", "b_scale", "a_zero"};
    layer.outputs = {"y"};
    const float aScale = 0.03f;
    const HostTensor w = randomWeights({depth, columns}, 7);
    const HostTensor as = HostTensor::scalar<float>(aScale), bs = HostTensor::scalar<float>(0.004f);
    const HostTensor zero = zeroPoint(a);
    const LayerWeights weights{nullptr, &w, nullptr, nullptr, &as, &bs, &zero};
    const QuantizedGemmPlan plan = planQuantizedGemm(layer, weights, DataType::kFloat32);
    EXPECT_EQ(plan.paddedDepth, 48);
    EXPECT_EQ(plan.paddedChannels, 32);
    const std::vector<float> x = randomFloats(rows * depth, 8, -4, 4);
    const std::vector<int16_t> cx = centered(x, aScale, a);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int> row(size_t(plan.paddedDepth), 0);
      for (int64_t kk = 0; kk < depth; ++kk) row[size_t(kk)] = operandOf(x[size_t(r * depth + kk)], plan.activation);
      for (int64_t n = 0; n < columns; ++n) {
        int32_t exact = 0;
        for (int64_t kk = 0; kk < depth; ++kk)
          exact += int32_t(cx[size_t(r * depth + kk)]) * w.data<int8_t>()[kk * columns + n];
        ASSERT_EQ(dequantized(plan, row, n), float(exact) * (aScale * 0.004f)) << "row " << r << " column " << n;
      }
    }
  }
}

// What the kernels cannot take is refused with the reason, so the layer stays float.
TEST(QuantizedGemmPlan, RefusesWhatTheKernelsDoNotTake) {
  Layer layer;
  layer.name = "qconv";
  layer.domain = fused::kDomain;
  layer.opType = quantized::kQuantizedConv;
  layer.attributes[fused::kBase] = std::string("Conv");
  layer.attributes["group"] = int64_t(2);
  const auto why = quantizedGemmRefusal(layer, LayerSignature{});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("grouped"), std::string::npos) << *why;
  layer.attributes.erase("group");
  EXPECT_FALSE(quantizedGemmRefusal(layer, LayerSignature{}).has_value());
  layer.attributes[quantized::kPrecision] = std::string("fp4");
  ASSERT_TRUE(quantizedGemmRefusal(layer, LayerSignature{}).has_value());
}

// An int8 residual with its scale (input 11): the int8 layer's plan carries the scale for the
// epilogues; an fp8 layer refuses it with a reason (the schema does too).
TEST(QuantizedGemmPlan, AnInt8ResidualIsTakenByInt8LayersWithItsScale) {
  Network network;
  network.addInput("x", DataType::kFloat32, Shape::fromDims({1, 16, 4, 4}));
  network.addInput("z", DataType::kInt8, Shape::fromDims({1, 16, 4, 4}));
  network.addConstant("w", randomWeights({16, 16, 1, 1}, 5));
  network.addConstant("xs", HostTensor::scalar<float>(0.02f));
  network.addConstant("ws", HostTensor::scalar<float>(0.01f));
  network.addConstant("zs", HostTensor::scalar<float>(0.0375f));
  Layer layer;
  layer.name = "qconv";
  layer.domain = fused::kDomain;
  layer.opType = quantized::kQuantizedConv;
  layer.attributes[fused::kBase] = std::string("Conv");
  layer.inputs = {"x", "w", "", "z", "xs", "ws", "", "", "", "", "", "zs"};
  layer.outputs = {"y"};
  network.addLayer(layer);
  network.inferShapes();
  const LayerSignature signature = layerSignature(network, network.layers()[0]);
  EXPECT_FALSE(quantizedGemmRefusal(network.layers()[0], signature).has_value());
  const QuantizedGemmPlan plan = planQuantizedGemm(network.layers()[0], signature.weights(), DataType::kFloat32);
  EXPECT_TRUE(plan.int8Residual);
  EXPECT_EQ(plan.residualScale, 0.0375f);
  Layer fp8 = network.layers()[0];
  fp8.attributes[quantized::kPrecision] = std::string("fp8");
  const auto why = quantizedGemmRefusal(fp8, signature);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("the residual 'z' is int8"), std::string::npos) << *why;
}

}  // namespace

// On a GPU: cuBLASLt either offers the fused fp8 product (per-column scales, fp16 output, bias
// epilogue) for a BERT-sized problem or says it has none; any other answer is an error the fused
// tactics would hide. Without a GPU there is no heuristic to ask.
TEST(QuantizedGemmPlan, Fp8ColumnScaledProductIsOfferedOrRefusedCleanly) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "GPU test skipped: no GPU";
  cublasLtHandle_t handle = nullptr;
  ASSERT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  for (const cublasLtEpilogue_t epilogue :
       {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS}) {
    GemmShape g;
    g.m = 4096, g.n = 768, g.k = 768, g.transB = true;
    g.abType = CUDA_R_8F_E4M3, g.cdType = CUDA_R_16F, g.compute = CUBLAS_COMPUTE_32F;
    g.epilogue = epilogue;
    // Plain, column scales alone, column and row scales.
    for (const int scales : {0, 1, 2}) {
      g.columnScales = scales >= 1, g.rowScales = scales == 2;
      SCOPED_TRACE(g.describe() + " epilogue " + std::to_string(int(epilogue)));
      try {
        LtGemm gemm(g);
        const auto results = gemm.heuristics(handle, 4, uint64_t(32) << 20, 256);
        std::cout << "[ measured ] " << g.describe() << " epilogue " << int(epilogue) << ": " << results.size()
                  << " algorithms\n";
        if (scales == 0) EXPECT_FALSE(results.empty()) << "cuBLASLt has fp8 products on this GPU";
      } catch (const Error& e) {
        // cuBLASLt answers INVALID_VALUE for scale modes it lacks; the fused tactics then try the next.
        std::cout << "[ measured ] " << g.describe() << " epilogue " << int(epilogue) << ": " << e.what() << "\n";
        if (scales == 0 || std::string(e.what()).find("INVALID_VALUE") == std::string::npos) ADD_FAILURE() << e.what();
      }
    }
  }
  cublasLtDestroy(handle);
}
