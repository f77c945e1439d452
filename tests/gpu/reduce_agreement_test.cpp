// CPU and CUDA engines agree on the reductions: every Reduce* op with axes as an attribute
// (opset 13) and as an input (opset 18), keepdims both ways, one axis to all, negative axes,
// empty axes with and without noop_with_empty_axes, empty reductions, long lines that split over
// blocks; integer types; ArgMax/ArgMin with ties and select_last_index; CumSum (exclusive,
// reverse, axis input) and TopK (largest, k input, the workspace path) in float, double and
// integers.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

constexpr int32_t kDouble = onnx::TensorProto::DOUBLE;
constexpr int32_t kInt8 = onnx::TensorProto::INT8;
constexpr int32_t kUInt8 = onnx::TensorProto::UINT8;

const char* const kReduceOps[] = {"ReduceSum",    "ReduceMean",   "ReduceMax",       "ReduceMin",
                                  "ReduceProd",   "ReduceL1",     "ReduceL2",        "ReduceLogSum",
                                  "ReduceLogSumExp", "ReduceSumSquare"};

struct AxesCase {
  std::vector<int64_t> dims;
  std::vector<int64_t> axes;  // empty: every axis
};

const std::vector<AxesCase> kAxesCases = {
    {{3, 5, 7}, {1}},     {{3, 5, 7}, {0, 2}}, {{2, 33, 17}, {-1}}, {{2, 33, 17}, {}},
    {{1, 9}, {1}},        {{1, 9}, {0}},       {{4, 1, 6}, {1, 2}}, {{2, 3, 4, 5}, {0, 2}},
    {{2, 40000}, {1}},    {{30001, 3}, {0}},   {{11}, {0}},
};

// Products and logs need positive inputs near 1.
HostTensor reduceInput(const std::vector<int64_t>& dims, uint32_t seed) { return test::randomFloats(dims, seed, 0.5f, 1.5f); }

int64_t reducedCount(const AxesCase& c) {
  int64_t count = 1;
  for (size_t d = 0; d < c.dims.size(); ++d) {
    const bool listed = std::find(c.axes.begin(), c.axes.end(), int64_t(d)) != c.axes.end() ||
                        std::find(c.axes.begin(), c.axes.end(), int64_t(d) - int64_t(c.dims.size())) != c.axes.end();
    if (c.axes.empty() || listed) count *= c.dims[d];
  }
  return count;
}

// Every Reduce* on `c` at `opset` (axes as attribute before 18, except ReduceSum from 13). Long
// products leave out ReduceProd: the inputs' fp16 rounding adds up there beyond fp16's bound.
void checkReductions(const AxesCase& c, int64_t opset, bool keepDims, Precision precision) {
  ModelBuilder mb(opset);
  mb.input("x", kFloat, c.dims);
  mb.initializer("axes", test::int64s({int64_t(c.axes.size())}, c.axes));
  for (const char* op : kReduceOps) {
    if (std::string(op) == "ReduceProd" && reducedCount(c) > 64) continue;
    const bool axesInput = opset >= 18 || std::string(op) == "ReduceSum";
    const std::string out = std::string(op) + "_out";
    mb.output(out);
    std::vector<std::string> inputs{"x"};
    if (axesInput && !c.axes.empty()) inputs.push_back("axes");
    auto& node = mb.node(op, inputs, {out}, op);
    if (!axesInput && !c.axes.empty()) ModelBuilder::setInts(node, "axes", c.axes);
    ModelBuilder::setInt(node, "keepdims", keepDims ? 1 : 0);
  }
  test::expectBackendsAgree(mb.bytes(), {{"x", reduceInput(c.dims, 131)}}, precision);
}

TEST(ReduceAgreement, EveryReductionOverAxisSetsAtBothOpsets) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const AxesCase& c : kAxesCases)
    for (int64_t opset : {13, 18})
      for (bool keepDims : {true, false})
        for (Precision precision : test::kFloatPrecisions) {
          SCOPED_TRACE(dimsToString(c.dims) + " axes " + dimsToString(c.axes) + " opset " + std::to_string(opset) +
                       " keepdims " + std::to_string(keepDims) + " " + toString(precision));
          checkReductions(c, opset, keepDims, precision);
        }
}

TEST(ReduceAgreement, ReductionsInBFloat16) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const AxesCase& c : {AxesCase{{3, 5, 7}, {1}}, AxesCase{{2, 33, 17}, {}}, AxesCase{{2, 40000}, {1}}}) {
    SCOPED_TRACE(dimsToString(c.dims) + " axes " + dimsToString(c.axes));
    ModelBuilder mb(18);
    mb.input("x", kFloat, c.dims).output("sum").output("mean").output("max").output("lse");
    mb.initializer("axes", test::int64s({int64_t(c.axes.size())}, c.axes));
    const std::vector<std::string> inputs = c.axes.empty() ? std::vector<std::string>{"x"}
                                                           : std::vector<std::string>{"x", "axes"};
    mb.node("ReduceSum", inputs, {"sum"}, "sum");
    mb.node("ReduceMean", inputs, {"mean"}, "mean");
    mb.node("ReduceMax", inputs, {"max"}, "max");
    mb.node("ReduceLogSumExp", inputs, {"lse"}, "lse");
    test::expectBackendsAgree(mb.bytes(), {{"x", reduceInput(c.dims, 132)}}, Precision::kBF16);
  }
}

// Empty axes at opset 18: every axis, or (noop_with_empty_axes) the input itself; also an empty
// axes input.
TEST(ReduceAgreement, EmptyAxesReduceEverythingOrNothing) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb(18);
    mb.input("x", kFloat, {3, 4, 5}).output("all").output("noop").output("noop_input").output("all_input");
    mb.initializer("none", test::int64s({0}, {}));
    mb.node("ReduceSum", {"x"}, {"all"}, "sum_all");
    ModelBuilder::setInt(mb.node("ReduceMax", {"x"}, {"noop"}, "max_noop"), "noop_with_empty_axes", 1);
    ModelBuilder::setInt(mb.node("ReduceMean", {"x", "none"}, {"noop_input"}, "mean_noop"), "noop_with_empty_axes", 1);
    ModelBuilder::setInt(mb.node("ReduceL2", {"x", "none"}, {"all_input"}, "l2_all"), "keepdims", 0);
    test::expectBackendsAgree(mb.bytes(), {{"x", reduceInput({3, 4, 5}, 133)}}, precision);
  }
}

// A reduced dim of 0 gives the identity (the max and min of nothing, +-inf, are not finite, which
// the agreement check refuses, so the sums and products stand for them); a kept dim of 0, no output.
TEST(ReduceAgreement, EmptyReductionsGiveTheIdentity) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 0, 3}, {0, 4}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb(18);
      mb.input("x", kFloat, dims).output("sum").output("prod").output("mean").output("l2").output("max");
      mb.initializer("axes", test::int64s({1}, {dims.size() == 3 ? 1 : 0}));
      mb.node("ReduceSum", {"x", "axes"}, {"sum"}, "sum");
      mb.node("ReduceProd", {"x", "axes"}, {"prod"}, "prod");
      mb.node("ReduceMean", {"x", "axes"}, {"mean"}, "mean");
      ModelBuilder::setInt(mb.node("ReduceL2", {"x", "axes"}, {"l2"}, "l2"), "keepdims", 0);
      mb.initializer("kept", test::int64s({1}, {dims.size() == 3 ? 2 : 1}));
      mb.node("ReduceMax", {"x", "kept"}, {"max"}, "max_of_kept_empty");  // no outputs (a dim stays 0)
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 134)}}, precision);
    }
}

template <class T>
HostTensor integers(DataType type, const std::vector<int64_t>& dims, int64_t lo, int64_t hi, uint32_t seed) {
  HostTensor t(type, dims);
  uint32_t state = seed;
  for (int64_t i = 0; i < t.elementCount(); ++i) {
    state = state * 1664525u + 1013904223u;
    int64_t v = lo + int64_t(state >> 8) % (hi - lo + 1);
    if (v == 0) v = 1;
    t.data<T>()[i] = T(v);
  }
  return t;
}

// Exact on integers; products and squares wrap alike (int32 products of 40 values overflow).
TEST(ReduceAgreement, IntegerReductions) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct IntCase {
    int32_t onnxType;
    DataType type;
    HostTensor value;
  };
  const std::vector<int64_t> dims{3, 40, 5};
  const IntCase cases[] = {
      {kInt32, DataType::kInt32, integers<int32_t>(DataType::kInt32, dims, -9, 9, 1)},
      {kInt64, DataType::kInt64, integers<int64_t>(DataType::kInt64, dims, -9, 9, 2)},
      {kInt8, DataType::kInt8, integers<int8_t>(DataType::kInt8, dims, -3, 3, 3)},
      {kUInt8, DataType::kUInt8, integers<uint8_t>(DataType::kUInt8, dims, 1, 3, 4)},
  };
  for (const IntCase& c : cases)
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, {0, 2}, {2}, {}}) {
      SCOPED_TRACE(std::string(toString(c.type)) + " axes " + dimsToString(axes));
      ModelBuilder mb(18);
      mb.input("x", c.onnxType, dims);
      mb.initializer("axes", test::int64s({int64_t(axes.size())}, axes));
      for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
                             "ReduceMean"}) {
        const std::string out = std::string(op) + "_out";
        mb.output(out);
        mb.node(op, axes.empty() ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "axes"}, {out}, op);
      }
      test::expectBackendsAgree(mb.bytes(), {{"x", c.value}});
    }
}

// Float values rounded to a few levels, so that lines hold ties.
HostTensor tiedFloats(const std::vector<int64_t>& dims, uint32_t seed) {
  HostTensor t = test::randomFloats(dims, seed, -2.0f, 2.0f);
  for (int64_t i = 0; i < t.elementCount(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i] * 2.0f) + 0.5f;
  return t;
}

// Indices compare exactly: fp32 only (fp16 storage would make ties the CPU does not see).
TEST(ReduceAgreement, ArgMaxAndArgMinWithTies) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{5, 7, 3}, {1, 301}, {9}, {2, 3000, 2}})
    for (int64_t axis : {int64_t(0), int64_t(-1), int64_t(dims.size() > 1 ? 1 : 0)})
      for (int keepDims : {0, 1}) {
        SCOPED_TRACE(dimsToString(dims) + " axis " + std::to_string(axis) + " keepdims " + std::to_string(keepDims));
        ModelBuilder mb(13);
        mb.input("x", kFloat, dims).input("xi", kInt32, dims);
        mb.output("max").output("max_last").output("min").output("min_last").output("int_max");
        auto arg = [&](const char* op, const char* in, const char* out, int last) {
          auto& node = mb.node(op, {in}, {out}, out);
          ModelBuilder::setInt(node, "axis", axis);
          ModelBuilder::setInt(node, "keepdims", keepDims);
          ModelBuilder::setInt(node, "select_last_index", last);
        };
        arg("ArgMax", "x", "max", 0);
        arg("ArgMax", "x", "max_last", 1);
        arg("ArgMin", "x", "min", 0);
        arg("ArgMin", "x", "min_last", 1);
        arg("ArgMax", "xi", "int_max", 1);
        test::expectBackendsAgree(mb.bytes(), {{"x", tiedFloats(dims, 135)},
                                               {"xi", integers<int32_t>(DataType::kInt32, dims, -4, 4, 5)}});
      }
}

HostTensor doubles(const std::vector<int64_t>& dims, uint32_t seed) {
  const HostTensor f = test::randomFloats(dims, seed, -3.0f, 3.0f);
  HostTensor d(DataType::kFloat64, dims);
  for (int64_t i = 0; i < f.elementCount(); ++i) d.data<double>()[i] = double(f.data<float>()[i]) * 1.0000001;
  return d;
}

TEST(ReduceAgreement, CumSumEveryWayOnFloatsDoublesAndIntegers) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{5}, {3, 7}, {2, 301, 3}, {1, 1000}})
    for (int64_t axis : {int64_t(0), int64_t(-1)})
      for (Precision precision : test::kFloatPrecisions) {
        SCOPED_TRACE(dimsToString(dims) + " axis " + std::to_string(axis) + " " + toString(precision));
        ModelBuilder mb(14);
        mb.input("x", kFloat, dims).input("xd", kDouble, dims).input("xi", kInt64, dims).input("axis", kInt64, {});
        mb.output("plain").output("exclusive").output("reverse").output("both").output("doubles").output("ints");
        auto cumsum = [&](const char* in, const char* out, int exclusive, int reverse) {
          auto& node = mb.node("CumSum", {in, "axis"}, {out}, out);
          ModelBuilder::setInt(node, "exclusive", exclusive);
          ModelBuilder::setInt(node, "reverse", reverse);
        };
        cumsum("x", "plain", 0, 0);
        cumsum("x", "exclusive", 1, 0);
        cumsum("x", "reverse", 0, 1);
        cumsum("x", "both", 1, 1);
        cumsum("xd", "doubles", 0, 1);
        cumsum("xi", "ints", 1, 0);
        test::expectBackendsAgree(mb.bytes(),
                                  {{"x", test::randomFloats(dims, 136)}, {"xd", doubles(dims, 137)},
                                   {"xi", integers<int64_t>(DataType::kInt64, dims, -50, 50, 6)},
                                   {"axis", HostTensor::scalar<int64_t>(axis)}},
                                  precision);
      }
}

TEST(ReduceAgreement, LogSumExpOnDoubles) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, {0, 2}, {}}) {
    SCOPED_TRACE(dimsToString(axes));
    ModelBuilder mb(13);
    mb.input("x", kDouble, {3, 5, 7}).output("lse").output("sum");
    auto& lse = mb.node("ReduceLogSumExp", {"x"}, {"lse"}, "lse");
    if (!axes.empty()) ModelBuilder::setInts(lse, "axes", axes);
    ModelBuilder::setInt(lse, "keepdims", 0);
    auto& mean = mb.node("ReduceMean", {"x"}, {"sum"}, "mean");
    if (!axes.empty()) ModelBuilder::setInts(mean, "axes", axes);
    test::expectBackendsAgree(mb.bytes(), {{"x", doubles({3, 5, 7}, 138)}});
  }
}

// fp32 compares indices exactly; fp16 compares the values only (rounding makes ties).
TEST(ReduceAgreement, TopKLargestAndSmallest) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct TopKCase {
    std::vector<int64_t> dims;
    int64_t axis, k;
  };
  for (const TopKCase& c : {TopKCase{{3, 11}, -1, 4}, TopKCase{{7, 5, 3}, 1, 5}, TopKCase{{1, 9}, 1, 1},
                            TopKCase{{2, 5000}, -1, 7}, TopKCase{{6, 4}, 0, 3}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(c.dims) + " axis " + std::to_string(c.axis) + " k " + std::to_string(c.k) + " " +
                   toString(precision));
      const bool indices = precision == Precision::kFP32;
      ModelBuilder mb(11);
      mb.input("x", kFloat, c.dims).input("xi", kInt32, c.dims).output("top").output("bottom").output("int_top");
      if (indices) mb.output("top_indices").output("bottom_indices").output("int_indices");
      mb.initializer("k", test::int64s({1}, {c.k}));
      auto topk = [&](const char* in, const char* values, const char* idx, int largest) {
        auto& node = mb.node("TopK", {in, "k"}, {values, idx}, values);
        ModelBuilder::setInt(node, "axis", c.axis);
        ModelBuilder::setInt(node, "largest", largest);
      };
      topk("x", "top", "top_indices", 1);
      topk("x", "bottom", "bottom_indices", 0);
      topk("xi", "int_top", "int_indices", 1);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(c.dims, 139)},
                                             {"xi", integers<int32_t>(DataType::kInt32, c.dims, -1000, 1000, 7)}},
                                precision);
    }
}

}  // namespace
