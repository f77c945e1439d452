// The CUDA integer kernels (kernels/cuda/integer) against the CPU kernels, bit-exact:
// MatMulInteger / QLinearMatMul (kernels/cpu/quant: integerMatMul, requantizeProducts) with
// per-tensor and per-row / per-column zero points and scales and broadcast batches, ConvInteger /
// QLinearConv (kernels/cpu/conv: convolutionInt32, requantize) with groups, strides, dilations and
// pads, and DynamicQuantizeLinear (kernels/cpu/quant) including ties and an all-zero input.
#include "layout_test_support.h"

#include <kernels/cpu/conv/conv.h>
#include <kernels/cpu/quant/quantize.h>
#include <kernels/cuda/integer/integer_math.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

template <class Q>
std::vector<Q> randomQ(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(std::is_signed_v<Q> ? -128 : 0, std::is_signed_v<Q> ? 127 : 255);
  std::vector<Q> v(static_cast<size_t>(n));
  for (auto& x : v) x = Q(d(rng));
  return v;
}

template <class Q>
constexpr ElementType typeOf() {
  return std::is_signed_v<Q> ? ElementType::kInt8 : ElementType::kUInt8;
}

struct MatMulCase {
  int64_t batch, M, K, N;
  bool broadcastB;  // one B for every batch
  bool perRow, perColumn;
};

template <class TA, class TB>
void checkMatMul(const MatMulCase& c) {
  const int64_t bBatch = c.broadcastB ? 1 : c.batch;
  const auto a = randomQ<TA>(c.batch * c.M * c.K, 1), b = randomQ<TB>(bBatch * c.K * c.N, 2);
  const auto aZero = randomQ<TA>(c.perRow ? c.M : 1, 3), bZero = randomQ<TB>(c.perColumn ? c.N : 1, 4);
  std::vector<int64_t> aOffsets, bOffsets;
  for (int64_t i = 0; i < c.batch; ++i) aOffsets.push_back(i * c.M * c.K), bOffsets.push_back(c.broadcastB ? 0 : i * c.K * c.N);
  std::vector<int32_t> expected(size_t(c.batch * c.M * c.N));
  cpu::integerMatMul<TA, TB>(a.data(), b.data(), expected.data(), c.batch, aOffsets.data(), bOffsets.data(), c.M, c.N,
                             c.K, aZero.data(), int64_t(aZero.size()), bZero.data(), int64_t(bZero.size()));
  IntegerMatMulShape shape;
  shape.M = c.M, shape.N = c.N, shape.K = c.K, shape.batchRank = 1;
  shape.batchDims[0] = c.batch, shape.aStrides[0] = c.M * c.K, shape.bStrides[0] = c.broadcastB ? 0 : c.K * c.N;
  DeviceBuffer da(a), db(b), dza(aZero), dzb(bZero), y(expected.size() * 4);
  const QuantOperand qa{da.get(), typeOf<TA>(), dza.get(), int64_t(aZero.size())};
  const QuantOperand qb{db.get(), typeOf<TB>(), dzb.get(), int64_t(bZero.size())};
  const std::string what = std::to_string(c.batch) + "x" + std::to_string(c.M) + "x" + std::to_string(c.K) + "x" +
                           std::to_string(c.N) + " " + toString(typeOf<TA>()) + "*" + toString(typeOf<TB>());
  KILN_CUDA_OK(integerMatMul(qa, qb, shape, y.as<int32_t>(), nullptr));
  EXPECT_EQ(y.read<int32_t>(), expected) << what;

  // QLinearMatMul's output stage on those products.
  const std::vector<float> aScale = c.perRow ? std::vector<float>{0.02f, 0.5f, 0.031f, 0.07f, 0.013f, 0.9f, 0.1f}
                                             : std::vector<float>{0.037f};
  std::vector<float> bScale(size_t(c.perColumn ? c.N : 1));
  for (size_t j = 0; j < bScale.size(); ++j) bScale[j] = 0.011f * float(j + 1);
  std::vector<float> rowScales(size_t(c.perRow ? c.M : 1));
  for (size_t i = 0; i < rowScales.size(); ++i) rowScales[i] = aScale[i % aScale.size()];
  const float yScale = 0.75f;
  const TA yZero = TA(std::is_signed_v<TA> ? -3 : 121);
  std::vector<TA> expectedQ(expected.size());
  cpu::requantizeProducts<TA>(expected.data(), c.batch, c.M, c.N, rowScales.data(), int64_t(rowScales.size()),
                              bScale.data(), int64_t(bScale.size()), yScale, yZero, expectedQ.data());
  DeviceBuffer das(rowScales), dbs(bScale), dys(std::vector<float>{yScale}), dyz(std::vector<TA>{yZero}),
      yq(expectedQ.size());
  MatMulRequantize r;
  r.aScale = das.as<float>(), r.aScaleCount = int64_t(rowScales.size());
  r.bScale = dbs.as<float>(), r.bScaleCount = int64_t(bScale.size());
  r.yScale = dys.as<float>(), r.yZero = dyz.get(), r.yType = typeOf<TA>();
  KILN_CUDA_OK(qlinearMatMul(qa, qb, shape, r, yq.get(), nullptr));
  EXPECT_EQ(yq.read<TA>(), expectedQ) << what << " requantized";
}

TEST(CudaIntegerMatMul, MatchesTheCpuKernelExactly) {
  KILN_REQUIRE_GPU();
  for (const MatMulCase& c : std::vector<MatMulCase>{{1, 4, 3, 2, false, false, false},
                                                     {1, 1, 1, 1, false, false, false},
                                                     {3, 5, 17, 7, true, true, true},
                                                     {2, 7, 33, 3, false, true, false},
                                                     {1, 3, 0, 4, false, false, true}}) {
    checkMatMul<uint8_t, uint8_t>(c);
    checkMatMul<uint8_t, int8_t>(c);
    checkMatMul<int8_t, uint8_t>(c);
    checkMatMul<int8_t, int8_t>(c);
  }
}

TEST(CudaIntegerMatMul, AbsentZeroPointsAreZero) {
  KILN_REQUIRE_GPU();
  const std::vector<uint8_t> a{255, 255, 255, 255}, b{255, 255, 255, 255};
  DeviceBuffer da(a), db(b), y(16);
  IntegerMatMulShape shape;
  shape.M = 2, shape.N = 2, shape.K = 2;
  KILN_CUDA_OK(integerMatMul({da.get(), ElementType::kUInt8, nullptr, 1}, {db.get(), ElementType::kUInt8, nullptr, 1},
                             shape, y.as<int32_t>(), nullptr));
  EXPECT_EQ(y.read<int32_t>(), (std::vector<int32_t>(4, 2 * 255 * 255)));
}

struct ConvCase {
  std::string name;
  int64_t batch, inChannels, outChannels, group;
  std::vector<int64_t> in, kernel, stride, dilation, padBegin;
};

cpu::ConvShape cpuShape(const ConvCase& c, std::vector<int64_t>& out) {
  cpu::ConvShape s;
  s.batch = c.batch, s.inChannels = c.inChannels, s.outChannels = c.outChannels, s.group = c.group;
  out.clear();
  const size_t rank = c.in.size(), skip = 3 - rank;  // leading spatial axes are 1
  for (size_t a = 0; a < rank; ++a) {
    const int64_t span = (c.kernel[a] - 1) * c.dilation[a] + 1;
    out.push_back((c.in[a] + 2 * c.padBegin[a] - span) / c.stride[a] + 1);  // symmetric pads
    s.window.in[skip + a] = c.in[a], s.window.out[skip + a] = out.back(), s.window.kernel[skip + a] = c.kernel[a];
    s.window.stride[skip + a] = c.stride[a], s.window.dilation[skip + a] = c.dilation[a];
    s.window.padBegin[skip + a] = s.window.padEnd[skip + a] = c.padBegin[a];
  }
  return s;
}

IntegerConvShape cudaShape(const cpu::ConvShape& s) {
  IntegerConvShape c;
  c.batch = s.batch, c.inChannels = s.inChannels, c.outChannels = s.outChannels, c.group = s.group;
  for (int a = 0; a < 3; ++a) {
    c.in[a] = s.window.in[a], c.out[a] = s.window.out[a], c.kernel[a] = s.window.kernel[a];
    c.stride[a] = s.window.stride[a], c.dilation[a] = s.window.dilation[a], c.padBegin[a] = s.window.padBegin[a];
  }
  return c;
}

template <class TX, class TW>
void checkConv(const ConvCase& c, bool perChannelZero) {
  std::vector<int64_t> out;
  const cpu::ConvShape shape = cpuShape(c, out);
  int64_t inPlane = 1, window = 1, outPlane = 1;
  for (size_t a = 0; a < c.in.size(); ++a) inPlane *= c.in[a], window *= c.kernel[a], outPlane *= out[a];
  const auto x = randomQ<TX>(c.batch * c.inChannels * inPlane, 5);
  const auto w = randomQ<TW>(c.outChannels * (c.inChannels / c.group) * window, 6);
  const auto xZero = randomQ<TX>(1, 7), wZero = randomQ<TW>(perChannelZero ? c.outChannels : 1, 8);
  std::vector<int32_t> xc, wc;
  for (TX v : x) xc.push_back(int32_t(v) - int32_t(xZero[0]));
  const int64_t block = int64_t(w.size()) / c.outChannels;
  for (size_t i = 0; i < w.size(); ++i) wc.push_back(int32_t(w[i]) - int32_t(wZero[perChannelZero ? i / size_t(block) : 0]));
  std::vector<int32_t> expected(size_t(c.batch * c.outChannels * outPlane));
  cpu::convolutionInt32(shape, xc.data(), wc.data(), expected.data());
  DeviceBuffer dx(x), dw(w), dzx(xZero), dzw(wZero), y(expected.size() * 4);
  const QuantOperand qx{dx.get(), typeOf<TX>(), dzx.get(), 1}, qw{dw.get(), typeOf<TW>(), dzw.get(), int64_t(wZero.size())};
  KILN_CUDA_OK(integerConv(qx, qw, cudaShape(shape), y.as<int32_t>(), nullptr));
  EXPECT_EQ(y.read<int32_t>(), expected) << c.name;

  // QLinearConv: the CPU's requantize with a per-channel multiplier (w_scale * x_scale / y_scale) and bias.
  const float xScale = 0.05f, yScale = 0.4f;
  std::vector<float> wScale, multiplier;
  std::vector<int32_t> bias;
  for (int64_t m = 0; m < c.outChannels; ++m) {
    wScale.push_back(0.01f * float(m + 1));
    multiplier.push_back(wScale.back() * xScale / yScale);
    bias.push_back(int32_t(m * 37 - 50));
  }
  const TX yZero = TX(std::is_signed_v<TX> ? 5 : 128);
  std::vector<TX> expectedQ(expected.size());
  cpu::requantize<TX>(c.batch, c.outChannels, outPlane, expected.data(), bias.data(), multiplier.data(), int32_t(yZero),
                      expectedQ.data());
  DeviceBuffer dxs(std::vector<float>{xScale}), dws(wScale), dys(std::vector<float>{yScale}), db(bias),
      dyz(std::vector<TX>{yZero}), yq(expectedQ.size());
  ConvRequantize r;
  r.xScale = dxs.as<float>(), r.wScale = dws.as<float>(), r.wScaleCount = c.outChannels, r.yScale = dys.as<float>();
  r.bias = db.as<int32_t>(), r.yZero = dyz.get(), r.yType = typeOf<TX>();
  KILN_CUDA_OK(qlinearConv(qx, qw, cudaShape(shape), r, yq.get(), nullptr));
  EXPECT_EQ(yq.read<TX>(), expectedQ) << c.name << " requantized";
}

TEST(CudaIntegerConv, MatchesTheCpuKernelExactly) {
  KILN_REQUIRE_GPU();
  const std::vector<ConvCase> cases{
      {"2-d 3x3 k2", 1, 1, 1, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}},
      {"2-d padded", 1, 1, 1, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {"2-d groups stride dilation", 2, 4, 6, 2, {7, 6}, {3, 2}, {2, 1}, {1, 2}, {1, 0}},
      {"1-d", 1, 3, 2, 1, {9}, {3}, {2}, {1}, {1}},
      {"3-d", 1, 2, 2, 1, {3, 4, 5}, {2, 2, 3}, {1, 2, 1}, {1, 1, 1}, {0, 1, 1}},
  };
  for (const auto& c : cases)
    for (bool perChannel : {false, true}) {
      checkConv<uint8_t, uint8_t>(c, perChannel);
      checkConv<uint8_t, int8_t>(c, perChannel);
      checkConv<int8_t, int8_t>(c, perChannel);
    }
}

TEST(CudaDynamicQuantizeLinear, MatchesTheCpuKernelExactly) {
  KILN_REQUIRE_GPU();
  std::vector<std::vector<float>> inputs{
      {0, 2, -3, -2.5f, 1.34f, 0.5f},  // the ONNX example
      {-1, -2.1f, -1.3f, -2.5f, -3.34f, -4},
      {1, 2.1f, 1.3f, 2.5f, 3.34f, 4, 1.5f, 2.6f, 3.9f, 4, 3, 2.345f},
      {0, 0, 0},
      {},
      {2.55f, -2.55f, 0.005f, 1.275f}};  // ties at the rounding points
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-7, 5);
  std::vector<float> big(1500);
  for (auto& v : big) v = d(rng);
  inputs.push_back(big);
  for (const auto& x : inputs) {
    std::vector<uint8_t> expected(x.size());
    float scale = -1;
    uint8_t zero = 0;
    cpu::dynamicQuantizeLinear(x.data(), int64_t(x.size()), expected.data(), &scale, &zero);
    DeviceBuffer dx(x), y(x.size()), ds(4), dz(1), workspace(kDynamicQuantizeWorkspaceBytes);
    KILN_CUDA_OK(dynamicQuantizeLinear(dx.get(), ElementType::kFloat32, int64_t(x.size()), y.as<uint8_t>(), ds.get(),
                                       ElementType::kFloat32, dz.as<uint8_t>(), workspace.get(), nullptr));
    std::vector<uint8_t> got = y.read<uint8_t>();
    got.resize(x.size());
    EXPECT_EQ(got, expected) << x.size() << " values";
    EXPECT_EQ(cpu::floatBits(ds.read<float>().at(0)), cpu::floatBits(scale)) << x.size() << " values";
    EXPECT_EQ(dz.read<uint8_t>().at(0), zero) << x.size() << " values";
  }
}

}  // namespace
