// INT4 weight-only builds through the public Builder: MatMul / Gemm weights packed into
// kiln.WeightOnlyMatMul (epilogue kept), the engine computing exactly the rule's dequantized
// weights (checked against the rule re-done here, in double), close to FP32 yet really quantized,
// a smaller plan; small, non-constant and held layers kept float with the reason; a backend
// without int4 kernels keeping them all float; bad group sizes refused. And onnxruntime's
// MatMulNBits, its weights packed here as its spec says (unsigned nibbles low first, blocks along
// K with a short last one, packed zero points or the default 8, float32 or float16 scales), against the spec's dequantization
// in double, on the int4 kernel and as the float MatMul a backend without it gets; the forms Kiln
// does not take refused at import with the reason.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include "common/test_models.h"

#include <kernels/cpu/common/numeric_types.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

constexpr int64_t kRows = 3, kK = 200, kHidden = 96, kOut = 80, kSmall = 7;

std::vector<float> valuesOf(const HostTensor& t) { return {t.data<float>(), t.data<float>() + t.elementCount()}; }

struct Weights {
  HostTensor gemmB = test::randomFloats({kHidden, kK}, 1, -0.2f, 0.2f);  // Gemm's B, [N, K] (transB)
  HostTensor gemmC = test::randomFloats({kHidden}, 2);
  HostTensor matMulB = test::randomFloats({kHidden, kOut}, 3, -0.3f, 0.3f);  // [K, N]
  HostTensor bias = test::randomFloats({kOut}, 4);
  HostTensor small = test::randomFloats({kOut, kSmall}, 5);
};
constexpr float kAlpha = 0.8f, kBeta = 1.25f;

// x [3, 200] -> Gemm (transB, alpha, beta, C) -> Relu -> MatMul + bias + residual r -> MatMul
// (80 x 7, small) -> z [3, 7]; y, before the small MatMul, is an output too.
std::shared_ptr<Network> mlpNetwork(const Weights& w) {
  ModelBuilder mb;
  mb.input("x", kFloat, {kRows, kK})
      .input("r", kFloat, {kRows, kOut})
      .initializer("wg", w.gemmB)
      .initializer("cg", w.gemmC)
      .initializer("wm", w.matMulB)
      .initializer("bm", w.bias)
      .initializer("ws", w.small)
      .output("y")
      .output("z");
  auto& gemm = mb.node("Gemm", {"x", "wg", "cg"}, {"g"}, "gemm");
  ModelBuilder::setInt(gemm, "transB", 1);
  ModelBuilder::setFloat(gemm, "alpha", kAlpha);
  ModelBuilder::setFloat(gemm, "beta", kBeta);
  mb.node("Relu", {"g"}, {"h"}, "relu");
  mb.node("MatMul", {"h", "wm"}, {"m"}, "matmul");
  mb.node("Add", {"m", "bm"}, {"mb"}, "bias_add");
  mb.node("Add", {"mb", "r"}, {"y"}, "residual_add");
  mb.node("MatMul", {"y", "ws"}, {"z"}, "small");
  return OnnxImporter().importBytes(mb.bytes());
}

// The rule (int4_weight_format.h) done again: W [K, N] at w[k * kStride + n * nStride], each
// group of G along K scaled by amax / 7, rounded half to even into [-8, 7], dequantized; [K, N].
std::vector<double> dequantizedByTheRule(const std::vector<float>& w, int64_t k, int64_t n, int64_t kStride,
                                         int64_t nStride, int64_t group) {
  std::vector<double> out(size_t(k * n));
  for (int64_t c = 0; c < n; ++c)
    for (int64_t first = 0; first < k; first += group) {
      const int64_t last = std::min(k, first + group);
      float amax = 0;
      for (int64_t row = first; row < last; ++row) amax = std::max(amax, std::fabs(w[size_t(row * kStride + c * nStride)]));
      const float scale = amax > 0 ? amax / 7.0f : 1.0f;
      for (int64_t row = first; row < last; ++row) {
        const float q = std::clamp(std::nearbyint(w[size_t(row * kStride + c * nStride)] / scale), -8.0f, 7.0f);
        out[size_t(row * n + c)] = double(scale * q);
      }
    }
  return out;
}

// y [rows, N] = x [rows, K] · w [K, N] (+ bias), in double.
std::vector<double> product(const std::vector<double>& x, const std::vector<double>& w, int64_t rows, int64_t k,
                            int64_t n, const std::vector<double>& bias = {}) {
  std::vector<double> y(size_t(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double sum = bias.empty() ? 0 : bias[size_t(c)];
      for (int64_t i = 0; i < k; ++i) sum += x[size_t(r * k + i)] * w[size_t(i * n + c)];
      y[size_t(r * n + c)] = sum;
    }
  return y;
}

double relativeError(const HostTensor& actual, const std::vector<double>& expected) {
  double error = 0, norm = 0;
  for (int64_t i = 0; i < actual.elementCount(); ++i) {
    const double d = actual.data<float>()[i] - expected[size_t(i)];
    error += d * d;
    norm += expected[size_t(i)] * expected[size_t(i)];
  }
  return std::sqrt(error / norm);
}

double cosine(const HostTensor& a, const HostTensor& b) {
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < a.elementCount(); ++i) {
    dot += double(a.data<float>()[i]) * b.data<float>()[i];
    na += double(a.data<float>()[i]) * a.data<float>()[i];
    nb += double(b.data<float>()[i]) * b.data<float>()[i];
  }
  return dot / std::sqrt(na * nb);
}

const LayerSummary& layerNamed(const BuildReport& report, const std::string& name) {
  for (const auto& l : report.layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

int weightOnlyLayers(const BuildReport& report) {
  return int(std::count_if(report.layers.begin(), report.layers.end(),
                           [](const LayerSummary& l) { return l.type == "kiln.WeightOnlyMatMul"; }));
}

BuilderConfig int4Config(int64_t group) {
  BuilderConfig config;
  config.int4Weights = true;
  config.int4GroupSize = group;
  return config;
}

std::map<std::string, HostTensor> runPlan(const std::vector<uint8_t>& plan, const std::map<std::string, HostTensor>& in) {
  return Runtime().load(plan)->createExecutionContext()->run(in);
}

}  // namespace

TEST(Int4Build, MatMulAndGemmWeightsBecomeInt4LayersThatComputeTheRule) {
  const Weights w;
  auto network = mlpNetwork(w);
  const HostTensor x = test::randomFloats({kRows, kK}, 10), r = test::randomFloats({kRows, kOut}, 11);
  const BuildResult fp32 = Builder().build(*network, BuilderConfig{});
  const auto expectedFp32 = runPlan(fp32.plan, {{"x", x}, {"r", r}});
  for (int64_t group : {32, 64, 128}) {
    SCOPED_TRACE("groups of " + std::to_string(group));
    const BuildResult built = Builder().build(*network, int4Config(group));
    EXPECT_EQ(weightOnlyLayers(built.report), 2);
    EXPECT_EQ(layerNamed(built.report, "gemm").type, "kiln.WeightOnlyMatMul");
    EXPECT_EQ(layerNamed(built.report, "gemm").origins, (std::vector<std::string>{"gemm", "relu"}));
    EXPECT_EQ(layerNamed(built.report, "matmul").type, "kiln.WeightOnlyMatMul");
    EXPECT_EQ(layerNamed(built.report, "matmul").origins,
              (std::vector<std::string>{"matmul", "bias_add", "residual_add"}));
    EXPECT_EQ(layerNamed(built.report, "small").precisionReason,
              "not int4: its weights hold 560 values (K 80 x N 7), under the 4096 worth packing");
    EXPECT_LT(built.plan.size(), fp32.plan.size() / 2) << "int4 plan " << built.plan.size() << " bytes, fp32 "
                                                        << fp32.plan.size();
    EXPECT_LT(built.report.weightBytes, fp32.report.weightBytes / 4);
    std::cout << "[ int4     ] groups of " << group << ": plan " << fp32.plan.size() << " -> " << built.plan.size()
              << " bytes, weights " << fp32.report.weightBytes << " -> " << built.report.weightBytes << "\n";

    const auto out = runPlan(built.plan, {{"x", x}, {"r", r}});
    // The rule in double: h = relu(x · deq(alpha W_g) + beta C), y = h · deq(W_m) + b + r, z = y · W_s.
    const std::vector<double> xs(x.data<float>(), x.data<float>() + x.elementCount());
    std::vector<float> alphaW = valuesOf(w.gemmB);
    for (float& v : alphaW) v *= kAlpha;
    std::vector<double> cBias;
    for (float c : valuesOf(w.gemmC)) cBias.push_back(double(kBeta * c));
    std::vector<double> h = product(xs, dequantizedByTheRule(alphaW, kK, kHidden, 1, kK, group), kRows, kK, kHidden, cBias);
    for (double& v : h) v = std::max(v, 0.0);
    const std::vector<float> bias = valuesOf(w.bias);
    std::vector<double> y = product(h, dequantizedByTheRule(valuesOf(w.matMulB), kHidden, kOut, kOut, 1, group), kRows,
                                    kHidden, kOut, std::vector<double>(bias.begin(), bias.end()));
    for (int64_t i = 0; i < kRows * kOut; ++i) y[size_t(i)] += r.data<float>()[i];
    const std::vector<float> small = valuesOf(w.small);
    const std::vector<double> z = product(y, std::vector<double>(small.begin(), small.end()), kRows, kOut, kSmall);
    EXPECT_LT(relativeError(out.at("y"), y), 1e-5);
    EXPECT_LT(relativeError(out.at("z"), z), 1e-5);
    // Close to FP32, yet really quantized.
    const double c = cosine(out.at("y"), expectedFp32.at("y"));
    std::vector<double> fp32Y(expectedFp32.at("y").data<float>(), expectedFp32.at("y").data<float>() + kRows * kOut);
    const double error = relativeError(out.at("y"), fp32Y);
    std::cout << "[ int4     ] groups of " << group << ": cosine " << c << ", relative L2 " << error << " to FP32\n";
    EXPECT_GE(c, 0.99);
    EXPECT_GT(error, 1e-4);
  }
}

TEST(Int4Build, LayersWithoutConstantWeightsOrHeldBackStayFloatWithTheReason) {
  const Weights w;
  ModelBuilder mb;
  mb.input("x", kFloat, {kRows, kK}).input("b", kFloat, {kK, kHidden}).initializer("wm", test::randomFloats({kK, kHidden}, 6));
  mb.output("y").output("z");
  mb.node("MatMul", {"x", "b"}, {"y"}, "activations");
  mb.node("MatMul", {"x", "wm"}, {"z"}, "held");
  auto network = OnnxImporter().importBytes(mb.bytes());
  BuilderConfig config = int4Config(64);
  config.layerPrecisions["held"] = Precision::kFP32;
  const BuildResult built = Builder().build(*network, config);
  EXPECT_EQ(weightOnlyLayers(built.report), 0);
  EXPECT_EQ(layerNamed(built.report, "activations").precisionReason,
            "not int4: its B is not a constant (int4 is for constant weights)");
  EXPECT_EQ(layerNamed(built.report, "held").precisionReason, "not int4: --layer-precision holds it to fp32");
  EXPECT_TRUE(std::any_of(built.report.warnings.begin(), built.report.warnings.end(), [](const std::string& s) {
    return s.find("--int4-weights quantized no layer") != std::string::npos;
  }));
}

TEST(Int4Build, ABackendWithoutInt4KernelsKeepsTheLayersFloat) {
  const Weights w;
  auto network = mlpNetwork(w);
  BuilderConfig config = int4Config(32);
  config.backend = BackendKind::kTestDevice;
  ::setenv("KILN_TEST_DEVICE_REFUSE", "WeightOnlyMatMul", 1);
  const BuildResult built = Builder().build(*network, config);
  ::unsetenv("KILN_TEST_DEVICE_REFUSE");
  EXPECT_EQ(weightOnlyLayers(built.report), 0);
  EXPECT_EQ(layerNamed(built.report, "gemm").precisionReason,
            "not int4: WeightOnlyMatMul is refused by KILN_TEST_DEVICE_REFUSE");
  EXPECT_EQ(layerNamed(built.report, "gemm").backend, "cpu-device");
}

// An fp16 build stores the activations and the bias in fp16, but the scales stay fp32 (the rule's
// one rounding), so the weights the layer multiplies by are the fp32 build's.
TEST(Int4Build, AnFp16BuildKeepsTheScalesFp32) {
  const Weights w;
  auto network = mlpNetwork(w);
  const HostTensor x = test::randomFloats({kRows, kK}, 10), r = test::randomFloats({kRows, kOut}, 11);
  BuilderConfig config = int4Config(32);
  const auto fp32 = runPlan(Builder().build(*network, config).plan, {{"x", x}, {"r", r}});
  config.allowFP16 = true;
  const BuildResult built = Builder().build(*network, config);
  const LayerSummary& matmul = layerNamed(built.report, "matmul");
  ASSERT_EQ(matmul.type, "kiln.WeightOnlyMatMul");
  EXPECT_EQ(matmul.precision, "fp16");
  ASSERT_EQ(matmul.inputs.size(), 5u);
  EXPECT_EQ(matmul.inputs[1].dtype, "uint8");
  EXPECT_EQ(matmul.inputs[2].dtype, "float16");  // the bias
  EXPECT_EQ(matmul.inputs[4].dtype, "float32");  // the scales
  const auto fp16 = runPlan(built.plan, {{"x", x}, {"r", r}});
  const std::vector<float> y = valuesOf(fp32.at("y"));
  EXPECT_LT(relativeError(fp16.at("y"), std::vector<double>(y.begin(), y.end())), 5e-3);
}

TEST(Int4Build, RefusesGroupSizesOtherThan32And64And128) {
  auto network = mlpNetwork(Weights{});
  for (int64_t group : {0, 16, 48, 256}) {
    try {
      Builder().build(*network, int4Config(group));
      ADD_FAILURE() << "group size " << group << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("--int4-group-size) is " + std::to_string(group) + "; use 32, 64 or 128"),
                std::string::npos)
          << e.what();
    }
  }
}

namespace {

// onnxruntime's MatMulNBits, packed as ContribOperators.md says.
struct NBitsWeights {
  static constexpr int64_t k = 72, n = 40, block = 32, blocks = 3;  // the last block holds 8 values
  std::vector<int> codes;        // [N, K], unsigned in [0, 15]
  std::vector<float> scales;     // [N, blocks]
  std::vector<int> zeroPoints;   // [N, blocks] in [0, 15]; empty: the default 8
  std::vector<float> bias;       // [N]
  bool halfScales = false;       // stored as float16 (the values above are float16's)

  NBitsWeights(bool asymmetric, uint32_t seed, bool half = false)
      : codes(size_t(n * k)), scales(size_t(n * blocks)), bias(size_t(n)), halfScales(half) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> code(0, 15);
    std::uniform_real_distribution<float> scale(0.01f, 0.05f), value(-1.0f, 1.0f);
    for (int& c : codes) c = code(rng);
    for (float& s : scales) s = half ? float(kernels::Float16(scale(rng))) : scale(rng);
    for (float& b : bias) b = value(rng);
    if (asymmetric) {
      zeroPoints.resize(size_t(n * blocks));
      for (int& z : zeroPoints) z = code(rng);
    }
  }
  // B [N, blocks, block / 2]: element k of a row in block k / block, byte (k % block) / 2, the
  // low nibble for even k; the last block's missing values are 0.
  HostTensor packedB() const {
    HostTensor b(DataType::kUInt8, {n, blocks, block / 2});
    std::fill(b.data<uint8_t>(), b.data<uint8_t>() + b.elementCount(), uint8_t(0));
    for (int64_t row = 0; row < n; ++row)
      for (int64_t i = 0; i < k; ++i)
        b.data<uint8_t>()[(row * blocks + i / block) * (block / 2) + (i % block) / 2] |=
            uint8_t(codes[size_t(row * k + i)] << (4 * (i % 2)));
    return b;
  }
  // [N, ceil(blocks / 2)]: two blocks a byte, the first in the low nibble.
  HostTensor packedZeroPoints() const {
    const int64_t bytes = (blocks + 1) / 2;
    HostTensor z(DataType::kUInt8, {n, bytes});
    std::fill(z.data<uint8_t>(), z.data<uint8_t>() + z.elementCount(), uint8_t(0));
    for (int64_t row = 0; row < n; ++row)
      for (int64_t i = 0; i < blocks; ++i)
        z.data<uint8_t>()[row * bytes + i / 2] |= uint8_t(zeroPoints[size_t(row * blocks + i)] << (4 * (i % 2)));
    return z;
  }
  HostTensor scaleTensor() const {
    if (!halfScales) return HostTensor::fromVector<float>({n, blocks}, scales);
    std::vector<kernels::Float16> half;
    for (float s : scales) half.push_back(kernels::Float16(s));
    return HostTensor::fromVector<kernels::Float16>({n, blocks}, half);
  }
  // (code - zero_point) * scale, as [K, N].
  std::vector<double> dequantized() const {
    std::vector<double> w(size_t(k * n));
    for (int64_t row = 0; row < n; ++row)
      for (int64_t i = 0; i < k; ++i) {
        const size_t cell = size_t(row * blocks + i / block);
        const int zero = zeroPoints.empty() ? 8 : zeroPoints[cell];
        w[size_t(i * n + row)] = double(codes[size_t(row * k + i)] - zero) * double(scales[cell]);
      }
    return w;
  }
};

ModelBuilder nbitsModel(const NBitsWeights& w, int64_t bits = 4, bool floatZeroPoints = false) {
  ModelBuilder mb;
  auto* contrib = mb.model().add_opset_import();
  contrib->set_domain("com.microsoft");
  contrib->set_version(1);
  mb.input("x", kFloat, {2, 5, NBitsWeights::k})
      .initializer("B", w.packedB())
      .initializer("scales", w.scaleTensor())
      .initializer("bias", HostTensor::fromVector<float>({NBitsWeights::n}, w.bias))
      .output("y");
  std::string zeroPoints;
  if (!w.zeroPoints.empty()) {
    zeroPoints = "zero_points";
    mb.initializer(zeroPoints, floatZeroPoints ? test::randomFloats({NBitsWeights::n, NBitsWeights::blocks}, 3)
                                               : w.packedZeroPoints());
  }
  auto& node = mb.node("MatMulNBits", {"x", "B", "scales", zeroPoints, "", "bias"}, {"y"}, "nbits");
  node.set_domain("com.microsoft");
  ModelBuilder::setInt(node, "K", NBitsWeights::k);
  ModelBuilder::setInt(node, "N", NBitsWeights::n);
  ModelBuilder::setInt(node, "bits", bits);
  ModelBuilder::setInt(node, "block_size", NBitsWeights::block);
  ModelBuilder::setInt(node, "accuracy_level", 4);
  return mb;
}

}  // namespace

TEST(MatMulNBitsImport, RunsTheSpecsDequantizationOnTheInt4KernelOrAsAFloatMatMul) {
  const HostTensor x = test::randomFloats({2, 5, NBitsWeights::k}, 20);
  const std::vector<double> xs(x.data<float>(), x.data<float>() + x.elementCount());
  for (bool asymmetric : {false, true}) {
    SCOPED_TRACE(asymmetric ? "packed zero points, float32 scales" : "default zero point 8, float16 scales");
    const NBitsWeights w(asymmetric, asymmetric ? 21 : 22, !asymmetric);
    auto network = OnnxImporter().importBytes(nbitsModel(w).bytes());
    const std::vector<double> expected =
        product(xs, w.dequantized(), 10, NBitsWeights::k, NBitsWeights::n, std::vector<double>(w.bias.begin(), w.bias.end()));
    // The reference executor runs MatMulNBits itself.
    const HostTensor reference = ReferenceExecutor(network).run({{"x", x}}).at("y").tensor;
    EXPECT_LT(relativeError(reference, expected), 1e-5);
    for (int level : {0, 3}) {
      SCOPED_TRACE("optimisation level " + std::to_string(level));
      BuilderConfig config;
      config.optimizationLevel = level;
      const BuildResult built = Builder().build(*network, config);
      EXPECT_EQ(layerNamed(built.report, "nbits").type, "kiln.WeightOnlyMatMul");
      EXPECT_LT(relativeError(runPlan(built.plan, {{"x", x}}).at("y"), expected), 1e-5);
    }
    // A backend without int4 kernels gets the dequantized weights as a float MatMul.
    BuilderConfig device;
    device.backend = BackendKind::kTestDevice;
    ::setenv("KILN_TEST_DEVICE_REFUSE", "WeightOnlyMatMul", 1);
    const BuildResult floatBuild = Builder().build(*network, device);
    ::unsetenv("KILN_TEST_DEVICE_REFUSE");
    const LayerSummary& layer = layerNamed(floatBuild.report, "nbits");
    EXPECT_EQ(layer.type, "kiln.FusedMatMul");
    EXPECT_EQ(layer.precisionReason,
              "not int4: WeightOnlyMatMul is refused by KILN_TEST_DEVICE_REFUSE (its weights run dequantized to float32)");
    EXPECT_LT(relativeError(runPlan(floatBuild.plan, {{"x", x}}).at("y"), expected), 1e-5);
  }
}

TEST(MatMulNBitsImport, RefusesWhatKilnDoesNotReadWithTheReason) {
  const NBitsWeights w(true, 30);
  auto importError = [](const std::string& bytes) {
    try {
      OnnxImporter().importBytes(bytes);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("imported");
  };
  EXPECT_NE(importError(nbitsModel(w, 4, true).bytes()).find("its zero points are float32 (the unpacked form)"),
            std::string::npos);
  EXPECT_NE(importError(nbitsModel(w, 8).bytes()).find("bits = 8: Kiln reads 4-bit MatMulNBits only"),
            std::string::npos);
  ModelBuilder withGroupIndex = nbitsModel(w);
  withGroupIndex.initializer("g_idx", HostTensor::fromVector<int32_t>({NBitsWeights::k}, std::vector<int32_t>(72, 0)));
  withGroupIndex.model().mutable_graph()->mutable_node(0)->set_input(4, "g_idx");
  EXPECT_NE(importError(withGroupIndex.bytes()).find("g_idx"), std::string::npos);
}
