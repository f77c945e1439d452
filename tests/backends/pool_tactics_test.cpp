// The CPU pooling tactics (cpu.pool.kiln, cpu.pool.onednn) through the Backend interface on random
// data: every offered tactic of MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool matches the
// op's own kernel (which the ONNX node tests check), pools oneDNN would compute differently keep the
// op's kernel, and the oneDNN kernel gives the same values on channels-last data.
#include <kernels/cpu/pool/onednn_pool.h>

#include "common/step_harness.h"
#include "backends/backend.h"
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <set>

using namespace kiln;

namespace {

struct PoolCase {
  std::string name, opType;
  std::map<std::string, Attribute> attributes;
  std::vector<int64_t> in;
  bool oneDnnExpected = true;
};

Layer poolLayer(const PoolCase& c) {
  Layer l;
  l.name = c.name;
  l.opType = c.opType;
  l.opsetVersion = 17;
  l.inputs = {"x"};
  l.outputs = {"y"};
  l.attributes = c.attributes;
  return l;
}

class PoolTactics : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolTactics, EveryTacticMatchesTheOpKernel) {
  const PoolCase& c = GetParam();
  const Layer layer = poolLayer(c);
  const auto backend = makeCpuBackend();
  auto stream = backend->createStream();
  const Value x(test::randomFloats(c.in, 3));
  const LayerInputs described{{DataType::kFloat32}, {c.in}, {nullptr}};
  auto run = [&](const std::string& tactic) {
    test::StandaloneStep step(*backend, layer, Tactic{tactic}, {nullptr});
    auto outputs = step.enqueue({&x}, *stream);
    stream->synchronize();
    return outputs.at(0).tensor;
  };
  std::set<std::string> offered;
  for (const Tactic& t : backend->tactics(layer, Precision::kFP32, described)) offered.insert(t.id);
  if (!c.oneDnnExpected) {
    std::string reference = "cpu." + c.opType;
    for (char& ch : reference) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_EQ(offered, std::set<std::string>{reference});  // the op's kernel alone
    return;
  }
  ASSERT_EQ(offered, (std::set<std::string>{"cpu.pool.kiln", "cpu.pool.onednn"}));
  const HostTensor want = run("cpu.pool.kiln"), got = run("cpu.pool.onednn");
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t i = 0; i < want.elementCount(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5 * (1 + std::fabs(want.data<float>()[i])))
        << "element " << i;
}

std::map<std::string, Attribute> window(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                                        std::vector<int64_t> pads, int64_t ceil = 0, int64_t includePad = 0,
                                        std::vector<int64_t> dilations = {1, 1}) {
  return {{"kernel_shape", kernel}, {"strides", strides},       {"pads", pads},
          {"ceil_mode", ceil},      {"count_include_pad", includePad}, {"dilations", dilations}};
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PoolTactics,
    ::testing::Values(
        PoolCase{"maxStem", "MaxPool", window({3, 3}, {2, 2}, {1, 1, 1, 1}), {2, 24, 17, 16}},
        PoolCase{"maxCeilDilated", "MaxPool", window({3, 2}, {2, 2}, {0, 1, 1, 0}, 1, 0, {2, 1}), {1, 8, 13, 11}},
        PoolCase{"averageExcludingPads", "AveragePool", window({3, 3}, {2, 2}, {1, 1, 1, 1}), {1, 20, 15, 15}},
        PoolCase{"averageIncludingPads", "AveragePool", window({3, 3}, {1, 1}, {1, 1, 1, 1}, 0, 1), {1, 16, 9, 9}},
        PoolCase{"averageCeilExcluding", "AveragePool", window({2, 2}, {2, 2}, {0, 0, 0, 0}, 1), {1, 8, 7, 7}},
        // Ceil mode reaching past the pads: oneDNN would count the overhang as padding.
        PoolCase{"averageCeilIncluding", "AveragePool", window({2, 2}, {2, 2}, {0, 0, 0, 0}, 1, 1), {1, 8, 7, 7}, false},
        PoolCase{"globalAverage", "GlobalAveragePool", {}, {2, 32, 7, 7}},
        PoolCase{"globalMax", "GlobalMaxPool", {}, {1, 24, 5, 6}},
        PoolCase{"maxPool1d", "MaxPool", {{"kernel_shape", std::vector<int64_t>{3}}}, {1, 4, 9}, false}),
    [](const auto& info) { return info.param.name; });

// NHWC in, NHWC out (between two oneDNN layers) gives the NCHW result's values in NHWC order.
TEST(OneDnnPooling, ChannelsLastDataGivesTheSameValues) {
  kernels::PoolShape shape;
  shape.batch = 2;
  shape.channels = 5;
  shape.window.in[1] = 9, shape.window.in[2] = 8;
  shape.window.kernel[1] = shape.window.kernel[2] = 3;
  shape.window.stride[1] = shape.window.stride[2] = 2;
  shape.window.padBegin[1] = shape.window.padBegin[2] = shape.window.padEnd[1] = shape.window.padEnd[2] = 1;
  shape.window.out[1] = 5, shape.window.out[2] = 4;
  for (kernels::PoolKind kind : {kernels::PoolKind::kMax, kernels::PoolKind::kAverageExcludingPadding}) {
    shape.kind = kind;
    ASSERT_TRUE(kernels::OneDnnPooling::supports(shape));
    const HostTensor x = test::randomFloats({2, 5, 9, 8}, 17);
    std::vector<float> nhwc(size_t(x.elementCount())), linearOut(2 * 5 * 5 * 4), nhwcOut(linearOut.size());
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 5; ++c)
        for (int64_t p = 0; p < 72; ++p) nhwc[size_t((n * 72 + p) * 5 + c)] = x.data<float>()[(n * 5 + c) * 72 + p];
    std::vector<std::vector<char>> scratch;
    auto workspace = [&](uint64_t bytes) { return scratch.emplace_back(bytes + 64).data(); };
    kernels::OneDnnPooling(false, false).run(shape, x.data<float>(), linearOut.data(), workspace);
    kernels::OneDnnPooling(true, true).run(shape, nhwc.data(), nhwcOut.data(), workspace);
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 5; ++c)
        for (int64_t p = 0; p < 20; ++p)
          ASSERT_FLOAT_EQ(nhwcOut[size_t((n * 20 + p) * 5 + c)], linearOut[size_t((n * 5 + c) * 20 + p)]);
  }
}

}  // namespace
