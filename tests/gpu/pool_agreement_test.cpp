// CPU and CUDA engines agree on the pools: MaxPool (with Indices in both storage orders, on int8
// too), AveragePool (counting padding or not), LpPool over 1-, 2- and 3-D windows with strides,
// dilations, asymmetric pads, auto_pad and ceil_mode, and the global pools over small and large
// planes, and over a channels-last map of one image large enough that its positions are split over
// several blocks (the squeeze-and-excitation pool of a batch-1 EfficientNet).
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

struct Window {
  std::vector<int64_t> input, kernel, strides, pads, dilations;
  const char* autoPad = nullptr;
  bool ceilMode = false;
};

const std::vector<Window> kWindows = {
    {{1, 3, 9, 11}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},
    {{2, 2, 8, 7}, {2, 3}, {2, 1}, {0, 1, 1, 0}, {}, nullptr, true},
    {{1, 4, 10, 10}, {3, 3}, {1, 1}, {}, {2, 2}},
    {{1, 2, 7, 5}, {3, 2}, {2, 2}, {}, {}, "SAME_UPPER"},
    {{1, 2, 7, 5}, {2, 2}, {3, 2}, {}, {}, "SAME_LOWER"},
    {{2, 3, 10}, {3}, {2}, {1, 0}, {}},
    {{1, 2, 5, 6, 7}, {2, 2, 3}, {1, 2, 2}, {0, 1, 0, 1, 0, 1}, {}},
};

void setWindow(onnx::NodeProto& node, const Window& w) {
  ModelBuilder::setInts(node, "kernel_shape", w.kernel);
  if (!w.strides.empty()) ModelBuilder::setInts(node, "strides", w.strides);
  if (!w.pads.empty()) ModelBuilder::setInts(node, "pads", w.pads);
  if (!w.dilations.empty()) ModelBuilder::setInts(node, "dilations", w.dilations);
  if (w.autoPad) ModelBuilder::setString(node, "auto_pad", w.autoPad);
  if (w.ceilMode) ModelBuilder::setInt(node, "ceil_mode", 1);
}

TEST(PoolAgreement, WindowedPools) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& w : kWindows)
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(w.input) + " kernel " + dimsToString(w.kernel) + " " + toString(precision));
      ModelBuilder mb(19);
      mb.input("x", kFloat, w.input).output("max").output("avg").output("avg_pad").output("lp2").output("lp3");
      setWindow(mb.node("MaxPool", {"x"}, {"max"}, "max_pool"), w);
      setWindow(mb.node("AveragePool", {"x"}, {"avg"}, "average_pool"), w);
      auto& padded = mb.node("AveragePool", {"x"}, {"avg_pad"}, "average_pool_counting_pads");
      setWindow(padded, w);
      ModelBuilder::setInt(padded, "count_include_pad", 1);
      setWindow(mb.node("LpPool", {"x"}, {"lp2"}, "lp_pool_2"), w);
      auto& lp3 = mb.node("LpPool", {"x"}, {"lp3"}, "lp_pool_3");
      setWindow(lp3, w);
      ModelBuilder::setInt(lp3, "p", 3);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(w.input, 121)}}, precision);
    }
}

// Indices compare exactly, so they run in fp32 only: fp16 storage can round two inputs of a window
// to one value, and the first of equals then wins where the CPU saw a larger second one.
TEST(PoolAgreement, MaxPoolIndicesInBothStorageOrders) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& w : kWindows)
    for (int order : {0, 1}) {
      SCOPED_TRACE(dimsToString(w.input) + " kernel " + dimsToString(w.kernel) + " storage_order " +
                   std::to_string(order));
      ModelBuilder mb(12);
      mb.input("x", kFloat, w.input).output("y").output("indices");
      auto& node = mb.node("MaxPool", {"x"}, {"y", "indices"}, "max_pool");
      setWindow(node, w);
      ModelBuilder::setInt(node, "storage_order", order);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(w.input, 122)}});
    }
}

TEST(PoolAgreement, MaxPoolOnEightBitIntegers) {
  KILN_REQUIRE_CUDA_BACKEND();
  HostTensor x(DataType::kInt8, {1, 2, 6, 5});
  for (int64_t i = 0; i < x.elementCount(); ++i) x.data<int8_t>()[i] = int8_t(i * 53 % 255 - 127);
  ModelBuilder mb(12);
  mb.input("x", onnx::TensorProto::INT8, {1, 2, 6, 5}).output("y");
  setWindow(mb.node("MaxPool", {"x"}, {"y"}, "max_pool_int8"), kWindows[0]);
  test::expectBackendsAgree(mb.bytes(), {{"x", x}});
}

TEST(PoolAgreement, GlobalPools) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{2, 3, 7, 9}, {1, 5, 4}, {3, 2, 2, 2, 2}, {1, 1, 1, 1}, {1, 2, 64, 48}, {0, 3, 4, 4}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb;
      mb.input("x", kFloat, dims).output("avg").output("max").output("lp");
      mb.node("GlobalAveragePool", {"x"}, {"avg"}, "global_average");
      mb.node("GlobalMaxPool", {"x"}, {"max"}, "global_max");
      ModelBuilder::setInt(mb.node("GlobalLpPool", {"x"}, {"lp"}, "global_lp"), "p", 3);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 123)}}, precision);
    }
}

TEST(PoolAgreement, GlobalPoolsOfOneLargeChannelsLastMap) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<int64_t> dims{1, 3, 37, 41};  // a stem-like convolution's 1517 positions of 40 channels
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("x", kFloat, dims).output("avg").output("max");
    mb.initializer("stem_w", test::randomFloats({40, dims[1], 3, 3}, 124, -0.4f, 0.4f));
    ModelBuilder::setInts(mb.node("Conv", {"x", "stem_w"}, {"stem"}, "stem"), "pads", {1, 1, 1, 1});
    mb.node("GlobalAveragePool", {"stem"}, {"avg"}, "global_average");
    mb.node("GlobalMaxPool", {"stem"}, {"max"}, "global_max");
    test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 125)}}, precision);
  }
}

}  // namespace
