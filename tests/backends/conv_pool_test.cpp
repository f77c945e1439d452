// Conv / ConvTranspose / ConvInteger and pools on random data, checked against naive direct loops
// written here (independent of the im2col / GEMM / depthwise kernels), plus error paths.
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include <kernels/cpu/common/numeric_types.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace kiln;
using kiln::test::ModelBuilder;

namespace {

using namespace kiln::test::onnx_types;

// 3-D view of 1-D/2-D/3-D spatial parameters: leading axes get size 1, kernel 1, stride 1, no pads.
struct Window3 {
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, out[3] = {1, 1, 1};
};

struct ConvCase {
  std::string name;
  int64_t n, c, m, group;
  std::vector<int64_t> in, kernel, strides, pads, dilations;
  bool bias;
};

Window3 forwardWindow(const ConvCase& k) {
  Window3 w;
  size_t r = k.in.size(), first = 3 - r;
  for (size_t i = 0; i < r; ++i) {
    w.in[first + i] = k.in[i];
    w.k[first + i] = k.kernel[i];
    w.s[first + i] = k.strides[i];
    w.d[first + i] = k.dilations[i];
    w.pb[first + i] = k.pads[i];
    w.out[first + i] = (k.in[i] + k.pads[i] + k.pads[i + r] - ((k.kernel[i] - 1) * k.dilations[i] + 1)) / k.strides[i] + 1;
  }
  return w;
}

std::vector<int64_t> outDims(int64_t n, int64_t c, const Window3& w, size_t rank) {
  std::vector<int64_t> dims = {n, c};
  for (size_t i = 3 - rank; i < 3; ++i) dims.push_back(w.out[i]);
  return dims;
}

template <class T>
double widen(T v) {
  if constexpr (std::is_same_v<T, kernels::Float16>) return double(float(v));
  else return double(v);
}

// The textbook definition: every output is a sum over its input channels and kernel taps.
template <class T, class Acc = double>
std::vector<Acc> naiveConv(const ConvCase& k, const Window3& w, const T* x, const T* wt, const float* b) {
  const int64_t cg = k.c / k.group, mg = k.m / k.group;
  const int64_t inSize = w.in[0] * w.in[1] * w.in[2], kSize = w.k[0] * w.k[1] * w.k[2];
  std::vector<Acc> y;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t m = 0; m < k.m; ++m)
      for (int64_t od = 0; od < w.out[0]; ++od)
        for (int64_t oh = 0; oh < w.out[1]; ++oh)
          for (int64_t ow = 0; ow < w.out[2]; ++ow) {
            Acc acc = b ? Acc(b[m]) : Acc(0);
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t kd = 0; kd < w.k[0]; ++kd)
                for (int64_t kh = 0; kh < w.k[1]; ++kh)
                  for (int64_t kw = 0; kw < w.k[2]; ++kw) {
                    int64_t id = od * w.s[0] - w.pb[0] + kd * w.d[0], ih = oh * w.s[1] - w.pb[1] + kh * w.d[1],
                            iw = ow * w.s[2] - w.pb[2] + kw * w.d[2];
                    if (id < 0 || ih < 0 || iw < 0 || id >= w.in[0] || ih >= w.in[1] || iw >= w.in[2]) continue;
                    int64_t c = m / mg * cg + ci;
                    acc += Acc(widen(x[(n * k.c + c) * inSize + (id * w.in[1] + ih) * w.in[2] + iw])) *
                           Acc(widen(wt[(m * cg + ci) * kSize + (kd * w.k[1] + kh) * w.k[2] + kw]));
                  }
            y.push_back(acc);
          }
  return y;
}

template <class Expected>
void expectClose(const HostTensor& actual, const std::vector<Expected>& expected, double tol, const std::string& what) {
  ASSERT_EQ(actual.elementCount(), int64_t(expected.size())) << what;
  std::vector<double> a = actual.toDoubleVector();
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(a[i], double(expected[i]), tol * (1 + std::fabs(double(expected[i])))) << what << " at " << i;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

HostTensor runSingle(ModelBuilder& mb, const ValueMap& inputs, const std::string& output = "y") {
  auto net = OnnxImporter().importBytes(mb.bytes());
  return ReferenceExecutor(net).run(inputs).at(output).tensor;
}

void setWindowAttributes(onnx::NodeProto& node, const ConvCase& k) {
  ModelBuilder::setInts(node, "strides", k.strides);
  ModelBuilder::setInts(node, "pads", k.pads);
  ModelBuilder::setInts(node, "dilations", k.dilations);
  ModelBuilder::setInt(node, "group", k.group);
}

class ConvAgainstNaive : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvAgainstNaive, MatchesDirectLoops) {
  const ConvCase& k = GetParam();
  const Window3 w = forwardWindow(k);
  HostTensor x = test::randomFloats(concat({k.n, k.c}, k.in), 1);
  HostTensor wt = test::randomFloats(concat({k.m, k.c / k.group}, k.kernel), 2);
  HostTensor b = test::randomFloats({k.m}, 3);
  ModelBuilder mb;
  mb.input("x", kFloat, x.dims()).initializer("w", wt).output("y");
  if (k.bias) mb.initializer("b", b);
  auto& node = mb.node("Conv", k.bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"},
                       {"y"});
  setWindowAttributes(node, k);
  HostTensor y = runSingle(mb, {{"x", x}});
  EXPECT_EQ(y.dims(), outDims(k.n, k.m, w, k.in.size()));
  expectClose(y, naiveConv(k, w, x.data<float>(), wt.data<float>(), k.bias ? b.data<float>() : nullptr), 1e-4, k.name);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvAgainstNaive,
    ::testing::Values(
        ConvCase{"basic3x3", 1, 3, 4, 1, {7, 6}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},
        ConvCase{"pointwise", 2, 8, 5, 1, {5, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},
        ConvCase{"pointwiseStrided", 1, 6, 4, 1, {7, 7}, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
        ConvCase{"stridedAsymPads", 2, 4, 6, 1, {9, 8}, {3, 2}, {2, 3}, {1, 0, 2, 1}, {1, 1}, true},
        ConvCase{"dilated", 1, 3, 2, 1, {10, 9}, {3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 3}, true},
        ConvCase{"grouped", 3, 6, 9, 3, {6, 7}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
        ConvCase{"depthwise", 2, 5, 5, 5, {9, 8}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
        ConvCase{"depthwiseStrided", 1, 4, 4, 4, {11, 10}, {5, 3}, {2, 2}, {2, 1, 1, 0}, {1, 2}, false},
        ConvCase{"depthwiseMultiplier", 1, 3, 6, 3, {6, 6}, {3, 3}, {1, 1}, {0, 1, 1, 0}, {1, 1}, true},
        ConvCase{"conv1d", 2, 3, 4, 1, {15}, {4}, {2}, {1, 2}, {2}, true},
        ConvCase{"depthwise1d", 1, 4, 4, 4, {12}, {3}, {1}, {1, 1}, {1}, true},
        ConvCase{"conv3d", 1, 2, 3, 1, {5, 6, 4}, {3, 2, 3}, {1, 2, 1}, {1, 0, 1, 1, 1, 0}, {1, 1, 1}, true},
        // GEMMs big enough to be split across threads: by output columns, and (few columns) by rows.
        ConvCase{"bigGemm", 1, 32, 48, 1, {20, 20}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
        ConvCase{"narrowGemm", 1, 64, 70, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
        ConvCase{"bigGemmBatch", 3, 16, 32, 1, {24, 24}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false}),
    [](const auto& info) { return info.param.name; });

// auto_pad SAME_* puts the odd padding pixel at the end (UPPER) or the start (LOWER); VALID pads nothing.
TEST(Conv, AutoPadMatchesExplicitPads) {
  for (std::string mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    ConvCase k{mode, 1, 2, 3, 1, {8, 7}, {4, 3}, {3, 2}, {0, 0, 0, 0}, {1, 1}, false};
    if (mode != "VALID")
      for (size_t i = 0; i < 2; ++i) {
        int64_t out = (k.in[i] + k.strides[i] - 1) / k.strides[i];
        int64_t total = std::max<int64_t>(0, (out - 1) * k.strides[i] + k.kernel[i] - k.in[i]);
        k.pads[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
        k.pads[i + 2] = total - k.pads[i];
      }
    const Window3 w = forwardWindow(k);
    HostTensor x = test::randomFloats({1, 2, 8, 7}, 4), wt = test::randomFloats({3, 2, 4, 3}, 5);
    ModelBuilder mb;
    mb.input("x", kFloat, x.dims()).initializer("w", wt).output("y");
    auto& node = mb.node("Conv", {"x", "w"}, {"y"});
    ModelBuilder::setString(node, "auto_pad", mode);
    ModelBuilder::setInts(node, "strides", k.strides);
    ModelBuilder::setInts(node, "kernel_shape", k.kernel);
    HostTensor y = runSingle(mb, {{"x", x}});
    EXPECT_EQ(y.dims(), outDims(1, 3, w, 2)) << mode;
    expectClose(y, naiveConv(k, w, x.data<float>(), wt.data<float>(), nullptr), 1e-4, mode);
  }
}

TEST(Conv, Float16ComputesInFloat) {
  ConvCase k{"fp16", 1, 4, 3, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false};
  const Window3 w = forwardWindow(k);
  HostTensor x32 = test::randomFloats({1, 4, 6, 6}, 6), w32 = test::randomFloats({3, 4, 3, 3}, 7);
  HostTensor x(DataType::kFloat16, x32.dims()), wt(DataType::kFloat16, w32.dims());
  for (int64_t i = 0; i < x.elementCount(); ++i) x.data<kernels::Float16>()[i] = kernels::Float16(x32.data<float>()[i]);
  for (int64_t i = 0; i < wt.elementCount(); ++i) wt.data<kernels::Float16>()[i] = kernels::Float16(w32.data<float>()[i]);
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT16, x.dims()).initializer("w", wt).output("y");
  setWindowAttributes(mb.node("Conv", {"x", "w"}, {"y"}), k);
  HostTensor y = runSingle(mb, {{"x", x}});
  ASSERT_EQ(y.dtype(), DataType::kFloat16);
  expectClose(y, naiveConv(k, w, x.data<kernels::Float16>(), wt.data<kernels::Float16>(), nullptr), 5e-3, "fp16");
}

// y[i*s - pad + k*d] += x[i] * w[k]: the scatter form of the transposed convolution.
TEST(ConvTranspose, MatchesScatterLoops) {
  struct Case { int64_t c, m, group; std::vector<int64_t> in, kernel, strides, pads, dilations, outputPadding; };
  for (const Case& k : {Case{2, 3, 1, {4, 5}, {3, 3}, {2, 2}, {1, 0, 1, 1}, {1, 1}, {1, 0}},
                        Case{4, 6, 2, {3, 3}, {2, 3}, {1, 2}, {0, 0, 0, 0}, {2, 1}, {0, 0}},
                        Case{3, 2, 1, {7}, {4}, {3}, {2, 1}, {1}, {2}},
                        Case{40, 18, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {0, 0}}}) {  // split GEMM
    const size_t r = k.in.size();
    const int64_t n = 2, cg = k.c / k.group, mg = k.m / k.group;
    std::vector<int64_t> out;
    for (size_t i = 0; i < r; ++i)
      out.push_back(k.strides[i] * (k.in[i] - 1) + k.outputPadding[i] + (k.kernel[i] - 1) * k.dilations[i] + 1 -
                    k.pads[i] - k.pads[i + r]);
    HostTensor x = test::randomFloats(concat({n, k.c}, k.in), 8), wt = test::randomFloats(concat({k.c, mg}, k.kernel), 9);
    HostTensor b = test::randomFloats({k.m}, 10);
    const int64_t inH = r == 2 ? k.in[0] : 1, inW = k.in[r - 1], kH = r == 2 ? k.kernel[0] : 1, kW = k.kernel[r - 1];
    const int64_t outH = r == 2 ? out[0] : 1, outW = out[r - 1];
    const int64_t sH = r == 2 ? k.strides[0] : 1, sW = k.strides[r - 1], dH = r == 2 ? k.dilations[0] : 1,
                  dW = k.dilations[r - 1], pH = r == 2 ? k.pads[0] : 0, pW = k.pads[r - 1];
    std::vector<double> expected(size_t(n * k.m * outH * outW));
    for (int64_t i = 0; i < int64_t(expected.size()); ++i) expected[size_t(i)] = b.data<float>()[i / (outH * outW) % k.m];
    for (int64_t bn = 0; bn < n; ++bn)
      for (int64_t c = 0; c < k.c; ++c)
        for (int64_t ih = 0; ih < inH; ++ih)
          for (int64_t iw = 0; iw < inW; ++iw)
            for (int64_t mo = 0; mo < mg; ++mo)
              for (int64_t kh = 0; kh < kH; ++kh)
                for (int64_t kw = 0; kw < kW; ++kw) {
                  int64_t oh = ih * sH - pH + kh * dH, ow = iw * sW - pW + kw * dW;
                  if (oh < 0 || ow < 0 || oh >= outH || ow >= outW) continue;
                  int64_t m = c / cg * mg + mo;
                  expected[size_t(((bn * k.m + m) * outH + oh) * outW + ow)] +=
                      double(x.data<float>()[((bn * k.c + c) * inH + ih) * inW + iw]) *
                      double(wt.data<float>()[((c * mg + mo) * kH + kh) * kW + kw]);
                }
    ModelBuilder mb;
    mb.input("x", kFloat, x.dims()).initializer("w", wt).initializer("b", b).output("y");
    auto& node = mb.node("ConvTranspose", {"x", "w", "b"}, {"y"});
    ModelBuilder::setInts(node, "strides", k.strides);
    ModelBuilder::setInts(node, "pads", k.pads);
    ModelBuilder::setInts(node, "dilations", k.dilations);
    ModelBuilder::setInts(node, "output_padding", k.outputPadding);
    ModelBuilder::setInt(node, "group", k.group);
    HostTensor y = runSingle(mb, {{"x", x}});
    EXPECT_EQ(y.dims(), concat({n, k.m}, out));
    expectClose(y, expected, 1e-4, "convtranspose rank " + std::to_string(r));
  }
}

TEST(ConvInteger, SubtractsZeroPointsExactly) {
  ConvCase k{"int", 2, 3, 4, 1, {6, 5}, {3, 2}, {1, 2}, {1, 0, 1, 1}, {1, 1}, false};
  const Window3 w = forwardWindow(k);
  HostTensor x(DataType::kUInt8, {2, 3, 6, 5}), wt(DataType::kUInt8, {4, 3, 3, 2});
  std::mt19937 rng(11);
  for (int64_t i = 0; i < x.elementCount(); ++i) x.data<uint8_t>()[i] = uint8_t(rng() % 256);
  for (int64_t i = 0; i < wt.elementCount(); ++i) wt.data<uint8_t>()[i] = uint8_t(rng() % 256);
  const uint8_t xZero = 7, wZero = 131;
  std::vector<int32_t> xc(size_t(x.elementCount())), wc(size_t(wt.elementCount()));
  for (size_t i = 0; i < xc.size(); ++i) xc[i] = int32_t(x.data<uint8_t>()[i]) - xZero;
  for (size_t i = 0; i < wc.size(); ++i) wc[i] = int32_t(wt.data<uint8_t>()[i]) - wZero;
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::UINT8, x.dims()).initializer("w", wt);
  mb.initializer("xz", HostTensor::scalar<uint8_t>(xZero)).initializer("wz", HostTensor::scalar<uint8_t>(wZero));
  mb.output("y");
  setWindowAttributes(mb.node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}), k);
  // Padding taps are zero after the zero point is subtracted, as ONNX defines.
  HostTensor y = runSingle(mb, {{"x", x}});
  ASSERT_EQ(y.dtype(), DataType::kInt32);
  std::vector<int64_t> expected = naiveConv<int32_t, int64_t>(k, w, xc.data(), wc.data(), nullptr);
  expectClose(y, expected, 0, "convinteger");
}

// Pools: naive loops over the window, padding taps skipped (max) or counted by count_include_pad.
struct PoolCase {
  std::string name;
  std::vector<int64_t> in, kernel, strides, pads;
  int64_t ceilMode, countIncludePad;
};

std::vector<int64_t> poolOut(const PoolCase& k) {
  std::vector<int64_t> out;
  size_t r = k.in.size();
  for (size_t i = 0; i < r; ++i) {
    double span = double(k.in[i] + k.pads[i] + k.pads[i + r] - k.kernel[i]) / double(k.strides[i]);
    int64_t o = int64_t(k.ceilMode ? std::ceil(span) : std::floor(span)) + 1;
    if (k.ceilMode && (o - 1) * k.strides[i] >= k.in[i] + k.pads[i]) --o;
    out.push_back(o);
  }
  return out;
}

class PoolAgainstNaive : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolAgainstNaive, MaxAndAverageMatchDirectLoops) {
  const PoolCase& k = GetParam();
  ASSERT_EQ(k.in.size(), 2u);
  const int64_t planes = 6, H = k.in[0], W = k.in[1];
  const std::vector<int64_t> out = poolOut(k);
  HostTensor x = test::randomFloats({2, 3, H, W}, 12);
  std::vector<float> expectedMax, expectedAvg;
  std::vector<int64_t> expectedIndex;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < out[0]; ++oh)
      for (int64_t ow = 0; ow < out[1]; ++ow) {
        float best = -std::numeric_limits<float>::infinity(), sum = 0;
        int64_t bestIndex = -1, count = 0, padded = 0;
        for (int64_t kh = 0; kh < k.kernel[0]; ++kh)
          for (int64_t kw = 0; kw < k.kernel[1]; ++kw) {
            int64_t ih = oh * k.strides[0] - k.pads[0] + kh, iw = ow * k.strides[1] - k.pads[1] + kw;
            padded += ih < H + k.pads[2] && iw < W + k.pads[3];
            if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;
            float v = x.data<float>()[(p * H + ih) * W + iw];
            sum += v, ++count;
            if (v > best) best = v, bestIndex = (p * H + ih) * W + iw;
          }
        expectedMax.push_back(best);
        expectedIndex.push_back(bestIndex);
        expectedAvg.push_back(sum / float(k.countIncludePad ? padded : count));
      }
  for (std::string op : {"MaxPool", "AveragePool"}) {
    ModelBuilder mb;
    mb.input("x", kFloat, x.dims()).output("y");
    if (op == "MaxPool") mb.output("i");
    auto& node = mb.node(op, {"x"}, op == "MaxPool" ? std::vector<std::string>{"y", "i"} : std::vector<std::string>{"y"});
    ModelBuilder::setInts(node, "kernel_shape", k.kernel);
    ModelBuilder::setInts(node, "strides", k.strides);
    ModelBuilder::setInts(node, "pads", k.pads);
    ModelBuilder::setInt(node, "ceil_mode", k.ceilMode);
    if (op == "AveragePool") ModelBuilder::setInt(node, "count_include_pad", k.countIncludePad);
    auto net = OnnxImporter().importBytes(mb.bytes());
    ValueMap result = ReferenceExecutor(net).run({{"x", x}});
    EXPECT_EQ(result.at("y").tensor.dims(), concat({2, 3}, out)) << op;
    if (op == "MaxPool") {
      expectClose(result.at("y").tensor, expectedMax, 0, k.name + " max");
      expectClose(result.at("i").tensor, expectedIndex, 0, k.name + " indices");
    } else {
      expectClose(result.at("y").tensor, expectedAvg, 1e-5, k.name + " average");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PoolAgainstNaive,
                         ::testing::Values(PoolCase{"plain", {8, 7}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 0, 0},
                                           PoolCase{"padded", {7, 9}, {3, 2}, {1, 2}, {1, 1, 1, 0}, 0, 0},
                                           PoolCase{"countPad", {6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 1},
                                           PoolCase{"ceil", {9, 8}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1, 0},
                                           PoolCase{"ceilCountPad", {7, 7}, {2, 3}, {2, 2}, {1, 0, 1, 1}, 1, 1}),
                         [](const auto& info) { return info.param.name; });

TEST(GlobalPools, AverageAndMaxPerPlane) {
  HostTensor x = test::randomFloats({2, 3, 5, 4}, 13);
  for (std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    ModelBuilder mb;
    mb.input("x", kFloat, x.dims()).output("y");
    mb.node(op, {"x"}, {"y"});
    HostTensor y = runSingle(mb, {{"x", x}});
    EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 1, 1}));
    std::vector<double> expected;
    for (int64_t p = 0; p < 6; ++p) {
      const float* plane = x.data<float>() + p * 20;
      double sum = 0, best = plane[0];
      for (int i = 0; i < 20; ++i) sum += plane[i], best = std::max(best, double(plane[i]));
      expected.push_back(op == "GlobalMaxPool" ? best : sum / 20);
    }
    expectClose(y, expected, 1e-6, op);
  }
}

// --- error paths: messages name the node and what is wrong ---

void expectErrorNaming(const std::function<void()>& fn, const std::vector<std::string>& words) {
  try {
    fn();
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

TEST(ConvErrors, MismatchedChannelsAtImportNameTheNode) {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, 3, 8, 8}).initializer("w", test::randomFloats({4, 2, 3, 3}, 14)).output("y");
  mb.node("Conv", {"x", "w"}, {"y"}, "conv_bad");
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, {"conv_bad", "3 channels", "expect 2"});
}

TEST(ConvErrors, MismatchedChannelsAtRunTimeNameTheNode) {
  ModelBuilder mb;
  mb.input("x", kFloat, {-1, -1, -1, -1}).initializer("w", test::randomFloats({4, 2, 3, 3}, 15)).output("y");
  mb.node("Conv", {"x", "w"}, {"y"}, "conv_dynamic");
  auto net = OnnxImporter().importBytes(mb.bytes());
  expectErrorNaming([&] { ReferenceExecutor(net).run({{"x", test::randomFloats({1, 5, 6, 6}, 16)}}); },
                    {"conv_dynamic", "5 channels"});
}

TEST(ConvErrors, KernelShapeDisagreeingWithWeights) {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, 2, 8, 8}).initializer("w", test::randomFloats({4, 2, 3, 3}, 17)).output("y");
  ModelBuilder::setInts(mb.node("Conv", {"x", "w"}, {"y"}, "conv_kshape"), "kernel_shape", {5, 5});
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, {"conv_kshape", "kernel_shape"});
}

TEST(ConvErrors, WindowLargerThanInput) {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, 1, 2, 2}).output("y");
  ModelBuilder::setInts(mb.node("MaxPool", {"x"}, {"y"}, "pool_big"), "kernel_shape", {3, 3});
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, {"pool_big", "larger"});
}

TEST(ConvErrors, PoolWithoutKernelShape) {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, 1, 4, 4}).output("y");
  mb.node("AveragePool", {"x"}, {"y"}, "pool_nokernel");
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, {"pool_nokernel", "kernel_shape"});
}

}  // namespace
