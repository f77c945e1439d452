// Tensor-shape ops (views, copies, symbolic inference, errors) against naive reference loops.
#include "tensor_shape_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace kiln;
using namespace kiln::test;

namespace {

void expectSameFloats(const HostTensor& actual, const std::vector<int64_t>& dims, const std::vector<float>& expected) {
  ASSERT_EQ(actual.dims(), dims);
  ASSERT_EQ(actual.elementCount(), int64_t(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(actual.data<float>()[i], expected[i]) << "element " << i;
}

TEST(TensorShapeOps, TransposeMatchesNaiveForManyPermutations) {
  // Sizes >= 8 on the inner axes exercise the tiled path; small ones the generic strided path.
  for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 3, 4, 5}, std::vector<int64_t>{2, 3, 17, 33}}) {
    HostTensor x = randomFloats(dims, 11);
    std::vector<int64_t> perm = {0, 1, 2, 3};
    do {
      auto y = runNode("Transpose", {given("x", x)}, [&](onnx::NodeProto& n) { ModelBuilder::setInts(n, "perm", perm); })[0];
      std::vector<int64_t> outDims;
      for (int64_t p : perm) outDims.push_back(dims[p]);
      std::vector<float> expected(size_t(x.elementCount()));
      for (int64_t i = 0; i < x.elementCount(); ++i) {
        auto out = unravel(i, outDims);
        std::vector<int64_t> in(4);
        for (size_t d = 0; d < 4; ++d) in[size_t(perm[d])] = out[d];
        expected[size_t(i)] = x.data<float>()[ravel(in, dims)];
      }
      expectSameFloats(y, outDims, expected);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(TensorShapeOps, TransposeMovesStrings) {
  HostTensor x(DataType::kString, {2, 3});
  for (int i = 0; i < 6; ++i) x.data<std::string>()[i] = "s" + std::to_string(i);
  auto y = runNode("Transpose", {given("x", x)})[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{3, 2}));
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) EXPECT_EQ(y.data<std::string>()[r * 2 + c], "s" + std::to_string(c * 3 + r));
}

TEST(TensorShapeOps, SliceMatchesNaiveWithNegativeStepsAndClamping) {
  std::vector<int64_t> dims = {5, 6, 7};
  HostTensor x = randomFloats(dims, 3);
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  std::vector<Case> cases = {
      {{1, -5}, {4, 100}, {0, 2}, {1, 2}},
      {{-1}, {-100}, {1}, {-1}},
      {{100, 0, 6}, {-100, 3, 1}, {2, 0, 1}, {-3, 1, -2}},
      {{0}, {INT64_MAX}, {-1}, {1}},
      {{3}, {1}, {0}, {1}},  // empty
  };
  for (const auto& c : cases) {
    auto y = runNode("Slice", {given("x", x), given("starts", ints1d(c.starts)), given("ends", ints1d(c.ends)),
                               given("axes", ints1d(c.axes)), given("steps", ints1d(c.steps))})[0];
    // Naive: walk each axis with the ONNX clamping rules written out directly.
    std::vector<std::vector<int64_t>> picks(3);
    for (size_t d = 0; d < 3; ++d)
      for (int64_t i = 0; i < dims[d]; ++i) picks[d].push_back(i);
    for (size_t k = 0; k < c.axes.size(); ++k) {
      size_t axis = size_t(c.axes[k] < 0 ? c.axes[k] + 3 : c.axes[k]);
      int64_t n = dims[axis], step = c.steps[k];
      int64_t s = c.starts[k] < 0 ? c.starts[k] + n : c.starts[k];
      int64_t e = c.ends[k] < 0 ? c.ends[k] + n : c.ends[k];
      picks[axis].clear();
      if (step > 0) {
        for (int64_t i = std::max<int64_t>(s, 0); i < std::min(e, n); i += step) picks[axis].push_back(i);
      } else {
        for (int64_t i = std::min(s, n - 1); i > std::max<int64_t>(e, -1); i += step) picks[axis].push_back(i);
      }
    }
    std::vector<int64_t> outDims = {int64_t(picks[0].size()), int64_t(picks[1].size()), int64_t(picks[2].size())};
    std::vector<float> expected;
    for (int64_t a : picks[0])
      for (int64_t b : picks[1])
        for (int64_t cc : picks[2]) expected.push_back(x.data<float>()[ravel({a, b, cc}, dims)]);
    expectSameFloats(y, outDims, expected);
  }
}

TEST(TensorShapeOps, ConcatAndSplitMatchNaive) {
  HostTensor a = randomFloats({2, 3, 4}, 1), b = randomFloats({2, 5, 4}, 2), c = randomFloats({2, 1, 4}, 3);
  auto y = runNode("Concat", {given("a", a), given("b", b), given("c", c)},
                   [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "axis", -2); })[0];
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i)
    for (const HostTensor* part : {&a, &b, &c})
      for (int64_t j = 0; j < part->dim(1) * 4; ++j) expected.push_back(part->data<float>()[i * part->dim(1) * 4 + j]);
  expectSameFloats(y, {2, 9, 4}, expected);

  auto parts = runNode("Split", {given("y", y), constant("split", ints1d({3, 5, 1}))},
                       [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "axis", 1); }, 3);
  expectSameFloats(parts[0], {2, 3, 4}, std::vector<float>(a.data<float>(), a.data<float>() + 24));
  expectSameFloats(parts[1], {2, 5, 4}, std::vector<float>(b.data<float>(), b.data<float>() + 40));
  expectSameFloats(parts[2], {2, 1, 4}, std::vector<float>(c.data<float>(), c.data<float>() + 8));
}

TEST(TensorShapeOps, SplitNumOutputsGivesSmallerLastPart) {
  HostTensor x = randomFloats({7}, 4);
  auto parts = runNode("Split", {given("x", x)}, [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "num_outputs", 3); },
                       3, 18);
  const float* v = x.data<float>();
  expectSameFloats(parts[0], {3}, {v[0], v[1], v[2]});
  expectSameFloats(parts[1], {3}, {v[3], v[4], v[5]});
  expectSameFloats(parts[2], {1}, {v[6]});
}

TEST(TensorShapeOps, ExpandAndTileMatchNaive) {
  HostTensor x = randomFloats({3, 1, 2}, 5);
  auto expanded = runNode("Expand", {given("x", x), given("shape", ints1d({2, 1, 4, 1}))})[0];
  std::vector<float> expected;
  for (int64_t i = 0; i < 2 * 3 * 4 * 2; ++i) {
    auto idx = unravel(i, {2, 3, 4, 2});
    expected.push_back(x.data<float>()[ravel({idx[1], 0, idx[3]}, {3, 1, 2})]);
  }
  expectSameFloats(expanded, {2, 3, 4, 2}, expected);

  auto tiled = runNode("Tile", {given("x", x), given("repeats", ints1d({2, 3, 2}))})[0];
  expected.clear();
  for (int64_t i = 0; i < 6 * 3 * 4; ++i) {
    auto idx = unravel(i, {6, 3, 4});
    expected.push_back(x.data<float>()[ravel({idx[0] % 3, 0, idx[2] % 2}, {3, 1, 2})]);
  }
  expectSameFloats(tiled, {6, 3, 4}, expected);
}

// Source index for one padded coordinate, by repeated reflection / wrapping (not by modulo).
int64_t naivePadSource(int64_t i, int64_t n, const std::string& mode) {
  if (mode == "edge") return std::clamp<int64_t>(i, 0, n - 1);
  while (i < 0 || i >= n) {
    if (mode == "wrap") i += i < 0 ? n : -n;
    else i = i < 0 ? -i : 2 * (n - 1) - i;  // reflect
  }
  return i;
}

TEST(TensorShapeOps, PadModesMatchNaive) {
  HostTensor x = randomFloats({3, 4}, 6);
  std::vector<int64_t> pads = {2, 5, 1, -1};  // begin rows, begin cols, end rows, end cols (crop one)
  for (std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    auto y = runNode("Pad", {given("x", x), given("pads", ints1d(pads)), given("value", HostTensor::scalar(7.5f))},
                     [&](onnx::NodeProto& n) { ModelBuilder::setString(n, "mode", mode); }, 1, 19)[0];
    std::vector<float> expected;
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t c = 0; c < 8; ++c) {
        int64_t sr = r - 2, sc = c - 5;
        bool inside = sr >= 0 && sr < 3 && sc >= 0 && sc < 4;
        if (mode == "constant" && !inside) expected.push_back(7.5f);
        else expected.push_back(x.data<float>()[naivePadSource(sr, 3, mode) * 4 + naivePadSource(sc, 4, mode)]);
      }
    expectSameFloats(y, {6, 8}, expected);
  }
}

TEST(TensorShapeOps, PadWithAxesAndOldAttributeForm) {
  HostTensor x = randomFloats({2, 3}, 7);
  auto y = runNode("Pad", {given("x", x), given("pads", ints1d({1, 2})), omitted(), given("axes", ints1d({-1}))}, {}, 1, 18)[0];
  auto old = runNode("Pad", {given("x", x)}, [](onnx::NodeProto& n) {
    ModelBuilder::setInts(n, "pads", {0, 1, 0, 2});
    ModelBuilder::setFloat(n, "value", 0.0f);
  }, 1, 2)[0];
  std::vector<float> expected;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 6; ++c) expected.push_back(c >= 1 && c < 4 ? x.data<float>()[r * 3 + c - 1] : 0.0f);
  expectSameFloats(y, {2, 6}, expected);
  expectSameFloats(old, {2, 6}, expected);
}

TEST(TensorShapeOps, CenterCropPadCropsAndPadsAroundTheCentre) {
  HostTensor x = randomFloats({5, 2}, 8);
  auto y = runNode("CenterCropPad", {given("x", x), given("shape", ints1d({3, 5}))}, {}, 1, 18)[0];
  std::vector<float> expected;
  for (int r = 0; r < 3; ++r)      // rows: crop (5 - 3) / 2 = 1 from the top
    for (int c = 0; c < 5; ++c) {  // cols: pad (5 - 2) / 2 = 1 before
      int sc = c - 1;
      expected.push_back(sc >= 0 && sc < 2 ? x.data<float>()[(r + 1) * 2 + sc] : 0.0f);
    }
  expectSameFloats(y, {3, 5}, expected);
}

TEST(TensorShapeOps, ReshapeFamilyReturnsViewsOfTheInput) {
  HostTensor x = randomFloats({2, 3, 4}, 9);
  auto net = singleNodeNetwork("Reshape", {given("x", x), constant("shape", ints1d({0, -1}))}, 1, {}, 17);
  auto out = ReferenceExecutor(net).run({{"x", x}});
  const HostTensor& y = out.at("y0").tensor;
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 12}));
  EXPECT_TRUE(y.sharesStorageWith(x));
  for (const char* op : {"Flatten", "Squeeze", "Unsqueeze", "Identity"}) {
    std::vector<NodeInput> inputs = {given("x", x)};
    if (std::string(op) == "Unsqueeze") inputs.push_back(constant("axes", ints1d({0, -1})));
    auto result = ReferenceExecutor(singleNodeNetwork(op, inputs, 1, {}, 17)).run({{"x", x}});
    EXPECT_TRUE(result.at("y0").tensor.sharesStorageWith(x)) << op;
  }
}

TEST(TensorShapeOps, ReshapeAllowZeroKeepsZeroDims) {
  HostTensor x(DataType::kFloat32, {0, 3});
  auto y = runNode("Reshape", {given("x", x), given("shape", ints1d({3, 0}))},
                   [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "allowzero", 1); })[0];
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{3, 0}));
}

TEST(TensorShapeOps, ReshapeToIncompatibleSizeNamesNodeAndShapes) {
  HostTensor x = randomFloats({2, 3, 4}, 10);
  expectErrorMentioning([&] { runNode("Reshape", {given("x", x), constant("shape", ints1d({5, 5}))}); },
                        {"the_node", "Reshape", "[2,3,4]", "5x5"});
  // Known only at run time: the same check fires while running.
  expectErrorMentioning([&] { runNode("Reshape", {given("x", x), given("shape", ints1d({7, -1}))}); },
                        {"the_node", "[2,3,4]", "7x-1"});
}

TEST(TensorShapeOps, BadAttributesFailNamingTheNode) {
  HostTensor x = randomFloats({2, 3}, 12);
  expectErrorMentioning([&] { runNode("Transpose", {given("x", x)}, [](onnx::NodeProto& n) { ModelBuilder::setInts(n, "perm", {0, 0}); }); },
                        {"the_node", "perm"});
  expectErrorMentioning([&] { runNode("Squeeze", {given("x", x), constant("axes", ints1d({1}))}); },
                        {"the_node", "squeeze axis 1"});
  expectErrorMentioning([&] { runNode("Gather", {given("x", x), given("i", ints1d({0, 3}))}); },
                        {"the_node", "index value 3", "length 2"});
  expectErrorMentioning([&] { runNode("Pad", {given("x", x), constant("pads", ints1d({1, 1}))}); },
                        {"the_node", "pads"});
}

TEST(TensorShapeOps, InferenceKeepsSymbolicDims) {
  ModelBuilder mb;
  mb.symbolicInput("x", onnx::TensorProto::FLOAT, {"batch", "seq", "768"});
  mb.initializer("heads", ints1d({0, 0, 12, 64}));
  mb.initializer("perm_axes", ints1d({0}));
  mb.node("Reshape", {"x", "heads"}, {"r"});
  auto& t = mb.node("Transpose", {"r"}, {"t"});
  ModelBuilder::setInts(t, "perm", {0, 2, 1, 3});
  mb.node("Unsqueeze", {"t", "perm_axes"}, {"u"});
  auto& f = mb.node("Flatten", {"x"}, {"f"});
  ModelBuilder::setInt(f, "axis", 2);
  mb.node("Shape", {"x"}, {"s"});
  mb.initializer("start", ints1d({0}));
  mb.initializer("end", ints1d({INT64_MAX}));
  mb.node("Slice", {"x", "start", "end"}, {"sl"});
  mb.initializer("flat", ints1d({-1, 768}));
  mb.node("Reshape", {"x", "flat"}, {"rf"});
  for (const char* o : {"u", "f", "s", "sl", "rf"}) mb.output(o);
  auto net = OnnxImporter().importBytes(mb.bytes());
  EXPECT_EQ(net->tensor("u").shape.toString(), "[1,batch,12,seq,64]");
  EXPECT_EQ(net->tensor("f").shape.toString(), "[?,768]");
  EXPECT_EQ(net->tensor("s").shape.toString(), "[3]");
  EXPECT_EQ(net->tensor("sl").shape.toString(), "[batch,seq,768]");
  EXPECT_EQ(net->tensor("rf").shape.toString(), "[?,768]");
}

TEST(TensorShapeOps, ShapeSizeAndGenerators) {
  HostTensor x = randomFloats({2, 3, 4}, 13);
  auto s = runNode("Shape", {given("x", x)}, [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "start", -2); }, 1, 15)[0];
  EXPECT_EQ(s.toInt64Vector(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(runNode("Size", {given("x", x)})[0].toInt64Vector(), std::vector<int64_t>{24});

  auto r = runNode("Range", {given("a", HostTensor::scalar<int32_t>(10)), given("b", HostTensor::scalar<int32_t>(-3)),
                             given("c", HostTensor::scalar<int32_t>(-4))})[0];
  EXPECT_EQ(r.toInt64Vector(), (std::vector<int64_t>{10, 6, 2, -2}));

  auto eye = runNode("EyeLike", {given("x", randomFloats({3, 5}, 14))}, [](onnx::NodeProto& n) {
    ModelBuilder::setInt(n, "k", 2);
    ModelBuilder::setInt(n, "dtype", onnx::TensorProto::INT32);
  })[0];
  ASSERT_EQ(eye.dtype(), DataType::kInt32);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(eye.data<int32_t>()[i * 5 + j], j == i + 2 ? 1 : 0);

  auto mask = runNode("Dropout", {given("x", x)}, {}, 2, 13);
  EXPECT_TRUE(mask[0].sharesStorageWith(x));
  for (int64_t i = 0; i < 24; ++i) EXPECT_TRUE(mask[1].data<bool>()[i]);
}

TEST(TensorShapeOps, DepthToSpaceAndSpaceToDepthMatchNaive) {
  int64_t b = 2, n = 2, c = 8, h = 3, w = 2;
  HostTensor x = randomFloats({n, c, h, w}, 15);
  for (std::string mode : {"DCR", "CRD"}) {
    auto y = runNode("DepthToSpace", {given("x", x)}, [&](onnx::NodeProto& p) {
      ModelBuilder::setInt(p, "blocksize", b);
      ModelBuilder::setString(p, "mode", mode);
    })[0];
    int64_t oc = c / (b * b);
    std::vector<float> expected;
    for (int64_t i = 0; i < n * oc * h * b * w * b; ++i) {
      auto o = unravel(i, {n, oc, h * b, w * b});
      int64_t bh = o[2] % b, bw = o[3] % b;
      int64_t ch = mode == "DCR" ? (bh * b + bw) * oc + o[1] : o[1] * b * b + bh * b + bw;
      expected.push_back(x.data<float>()[ravel({o[0], ch, o[2] / b, o[3] / b}, {n, c, h, w})]);
    }
    expectSameFloats(y, {n, oc, h * b, w * b}, expected);
    if (mode == "DCR") {  // SpaceToDepth inverts DCR
      auto back = runNode("SpaceToDepth", {given("y", y)}, [&](onnx::NodeProto& p) { ModelBuilder::setInt(p, "blocksize", b); })[0];
      expectSameFloats(back, {n, c, h, w}, std::vector<float>(x.data<float>(), x.data<float>() + x.elementCount()));
    }
  }
}

TEST(TensorShapeOps, TriluAndReverseSequenceMatchNaive) {
  HostTensor x = randomFloats({2, 4, 5}, 16);
  for (int upper : {0, 1})
    for (int64_t k : {-2, 0, 3}) {
      auto y = runNode("Trilu", {given("x", x), given("k", HostTensor::scalar<int64_t>(k))},
                       [&](onnx::NodeProto& n) { ModelBuilder::setInt(n, "upper", upper); })[0];
      std::vector<float> expected;
      for (int64_t i = 0; i < 40; ++i) {
        auto idx = unravel(i, {2, 4, 5});
        bool keep = upper ? idx[2] - idx[1] >= k : idx[2] - idx[1] <= k;
        expected.push_back(keep ? x.data<float>()[i] : 0.0f);
      }
      expectSameFloats(y, {2, 4, 5}, expected);
    }
  // [time 4, batch 2, 5] with lengths 3 and 1
  auto y = runNode("ReverseSequence", {given("x", x.reshaped({4, 2, 5})), given("lens", ints1d({3, 1}))})[0];
  std::vector<float> expected;
  std::vector<int64_t> lens = {3, 1};
  for (int64_t i = 0; i < 40; ++i) {
    auto idx = unravel(i, {4, 2, 5});
    int64_t t = idx[0] < lens[size_t(idx[1])] ? lens[size_t(idx[1])] - 1 - idx[0] : idx[0];
    expected.push_back(x.data<float>()[ravel({t, idx[1], idx[2]}, {4, 2, 5})]);
  }
  expectSameFloats(y, {4, 2, 5}, expected);
}

}  // namespace
