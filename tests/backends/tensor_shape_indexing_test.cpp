// Indexed tensor-shape ops and Resize against naive reference loops.
#include "tensor_shape_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace kiln;
using namespace kiln::test;

namespace {

std::vector<float> floats(const HostTensor& t) { return {t.data<float>(), t.data<float>() + t.elementCount()}; }

TEST(TensorShapeIndexing, GatherMatchesNaiveWithNegativeIndices) {
  HostTensor x = randomFloats({3, 5, 4}, 21);
  HostTensor idx = randomInts({2, 3}, 22, -5, 4);
  auto y = runNode("Gather", {given("x", x), given("i", idx)}, [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "axis", 1); })[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{3, 2, 3, 4}));
  for (int64_t i = 0; i < y.elementCount(); ++i) {
    auto o = unravel(i, y.dims());
    int64_t k = idx.data<int64_t>()[o[1] * 3 + o[2]];
    if (k < 0) k += 5;
    ASSERT_EQ(y.data<float>()[i], x.data<float>()[ravel({o[0], k, o[3]}, {3, 5, 4})]);
  }
}

TEST(TensorShapeIndexing, GatherElementsAndScatterElementsMatchNaive) {
  HostTensor x = randomFloats({4, 3}, 23);
  HostTensor idx = randomInts({5, 3}, 24, -4, 3);
  auto y = runNode("GatherElements", {given("x", x), given("i", idx)})[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{5, 3}));
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      int64_t k = idx.data<int64_t>()[r * 3 + c];
      ASSERT_EQ(y.data<float>()[r * 3 + c], x.data<float>()[(k < 0 ? k + 4 : k) * 3 + c]);
    }

  HostTensor updates = randomFloats({5, 3}, 25);
  for (std::string reduction : {"add", "mul", "max", "min"}) {
    auto s = runNode("ScatterElements", {given("x", x), given("i", idx), given("u", updates)},
                     [&](onnx::NodeProto& n) { ModelBuilder::setString(n, "reduction", reduction); }, 1, 18)[0];
    std::vector<float> expected = floats(x);
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t c = 0; c < 3; ++c) {
        int64_t k = idx.data<int64_t>()[r * 3 + c];
        float& e = expected[size_t((k < 0 ? k + 4 : k) * 3 + c)];
        float u = updates.data<float>()[r * 3 + c];
        e = reduction == "add" ? e + u : reduction == "mul" ? e * u : reduction == "max" ? std::max(e, u) : std::min(e, u);
      }
    ASSERT_EQ(floats(s), expected) << reduction;
  }
}

TEST(TensorShapeIndexing, GatherNDWithBatchDimsAndScatterNDMatchNaive) {
  HostTensor x = randomFloats({2, 3, 4, 5}, 26);
  HostTensor idx = ints({2, 3, 2}, {0, 1, 2, 3, -1, 0, 1, 1, 0, 3, 2, -2});
  auto y = runNode("GatherND", {given("x", x), given("i", idx)}, [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "batch_dims", 1); })[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 5}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 3; ++t) {
      int64_t i = idx.data<int64_t>()[(b * 3 + t) * 2], j = idx.data<int64_t>()[(b * 3 + t) * 2 + 1];
      i = i < 0 ? i + 3 : i;
      j = j < 0 ? j + 4 : j;
      for (int64_t k = 0; k < 5; ++k)
        ASSERT_EQ(y.data<float>()[(b * 3 + t) * 5 + k], x.data<float>()[ravel({b, i, j, k}, {2, 3, 4, 5})]);
    }

  HostTensor data = randomFloats({4, 3}, 27), updates = randomFloats({3, 3}, 28);
  HostTensor rows = ints({3, 1}, {2, 0, 2});
  auto s = runNode("ScatterND", {given("d", data), given("i", rows), given("u", updates)},
                   [](onnx::NodeProto& n) { ModelBuilder::setString(n, "reduction", "mul"); }, 1, 16)[0];
  std::vector<float> expected = floats(data);
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t k = 0; k < 3; ++k) expected[size_t(rows.data<int64_t>()[t] * 3 + k)] *= updates.data<float>()[t * 3 + k];
  ASSERT_EQ(floats(s), expected);
}

TEST(TensorShapeIndexing, OneHotCompressNonZeroMatchNaive) {
  HostTensor idx = ints({2, 2}, {1, -1, 7, 0});
  auto y = runNode("OneHot", {given("i", idx), given("depth", HostTensor::scalar<float>(4)),
                              given("v", HostTensor::fromVector<int32_t>({2}, {-3, 9}))},
                   [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "axis", 1); })[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 4, 2}));
  for (int64_t i = 0; i < 16; ++i) {
    auto o = unravel(i, {2, 4, 2});
    int64_t k = idx.data<int64_t>()[o[0] * 2 + o[2]];
    ASSERT_EQ(y.data<int32_t>()[i], (k < 0 ? k + 4 : k) == o[1] ? 9 : -3);
  }

  HostTensor x = randomFloats({3, 4}, 29);
  HostTensor keep = HostTensor::fromVector<bool>({3}, {true, false, true});
  auto c = runNode("Compress", {given("x", x), given("c", keep)}, [](onnx::NodeProto& n) { ModelBuilder::setInt(n, "axis", 0); })[0];
  std::vector<float> expected(x.data<float>(), x.data<float>() + 4);
  expected.insert(expected.end(), x.data<float>() + 8, x.data<float>() + 12);
  ASSERT_EQ(c.dims(), (std::vector<int64_t>{2, 4}));
  ASSERT_EQ(floats(c), expected);

  HostTensor sparse = randomInts({3, 4}, 30, -1, 1);
  auto nz = runNode("NonZero", {given("x", sparse)})[0];
  std::vector<int64_t> rowsCols[2];
  for (int64_t i = 0; i < 12; ++i)
    if (sparse.data<int64_t>()[i] != 0) {
      rowsCols[0].push_back(i / 4);
      rowsCols[1].push_back(i % 4);
    }
  ASSERT_EQ(nz.dims(), (std::vector<int64_t>{2, int64_t(rowsCols[0].size())}));
  std::vector<int64_t> flat = rowsCols[0];
  flat.insert(flat.end(), rowsCols[1].begin(), rowsCols[1].end());
  EXPECT_EQ(nz.toInt64Vector(), flat);
}

TEST(TensorShapeIndexing, UniqueMatchesNaive) {
  HostTensor x = randomInts({20}, 31, -3, 3);
  for (int sorted : {0, 1}) {
    auto out = runNode("Unique", {given("x", x)}, [&](onnx::NodeProto& n) { ModelBuilder::setInt(n, "sorted", sorted); }, 4, 11);
    std::vector<int64_t> values, first, inverse, counts;
    std::map<int64_t, size_t> seen;  // value -> position in first-occurrence order
    for (int64_t i = 0; i < 20; ++i) {
      int64_t v = x.data<int64_t>()[i];
      if (!seen.count(v)) {
        seen[v] = values.size();
        values.push_back(v);
        first.push_back(i);
        counts.push_back(0);
      }
      ++counts[seen[v]];
    }
    std::vector<size_t> order(values.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (sorted) std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
    std::vector<int64_t> ev, ef, ec, position(values.size());
    for (size_t p = 0; p < order.size(); ++p) {
      ev.push_back(values[order[p]]);
      ef.push_back(first[order[p]]);
      ec.push_back(counts[order[p]]);
      position[order[p]] = int64_t(p);
    }
    for (int64_t i = 0; i < 20; ++i) inverse.push_back(position[seen[x.data<int64_t>()[i]]]);
    EXPECT_EQ(out[0].toInt64Vector(), ev);
    EXPECT_EQ(out[1].toInt64Vector(), ef);
    EXPECT_EQ(out[2].toInt64Vector(), inverse);
    EXPECT_EQ(out[3].toInt64Vector(), ec);
  }
}

TEST(TensorShapeIndexing, ResizeLinearHalfPixelMatchesNaiveBilinear) {
  HostTensor x = randomFloats({1, 2, 5, 7}, 32);
  for (std::vector<float> scales : {std::vector<float>{1, 1, 2.0f, 1.5f}, std::vector<float>{1, 1, 0.6f, 0.5f}}) {
    auto y = runNode("Resize", {given("x", x), omitted(), given("s", HostTensor::fromVector<float>({4}, scales))},
                     [](onnx::NodeProto& n) { ModelBuilder::setString(n, "mode", "linear"); }, 1, 13)[0];
    int64_t oh = int64_t(std::floor(5 * scales[2])), ow = int64_t(std::floor(7 * scales[3]));
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 2, oh, ow}));
    auto coordinate = [](int64_t o, float scale, int64_t n, int64_t& lo, int64_t& hi) {
      double s = std::max(0.0, (o + 0.5) / scale - 0.5);
      lo = std::min<int64_t>(int64_t(s), n - 1);
      hi = std::min<int64_t>(lo + 1, n - 1);
      return s - double(int64_t(s));
    };
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t y0, y1, x0, x1;
          double fy = coordinate(i, scales[2], 5, y0, y1), fx = coordinate(j, scales[3], 7, x0, x1);
          auto at = [&](int64_t r, int64_t q) { return double(x.data<float>()[(c * 5 + r) * 7 + q]); };
          double expected = (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) + fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
          ASSERT_NEAR(y.data<float>()[(c * oh + i) * ow + j], expected, 1e-5) << c << "," << i << "," << j;
        }
  }
}

TEST(TensorShapeIndexing, ResizeAntialiasHalvesWithATriangleFilter) {
  HostTensor x = randomFloats({1, 8}, 33);
  auto y = runNode("Resize", {given("x", x), omitted(), omitted(), given("sizes", ints1d({1, 4}))}, [](onnx::NodeProto& n) {
    ModelBuilder::setString(n, "mode", "linear");
    ModelBuilder::setInt(n, "antialias", 1);
  }, 1, 18)[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 4}));
  auto at = [&](int64_t i) { return x.data<float>()[std::clamp<int64_t>(i, 0, 7)]; };
  for (int64_t o = 0; o < 4; ++o)
    EXPECT_NEAR(y.data<float>()[o], (at(2 * o - 1) + 3 * at(2 * o) + 3 * at(2 * o + 1) + at(2 * o + 2)) / 8, 1e-6);
}

TEST(TensorShapeIndexing, ResizeNearestKeepsIntegersExactAndHonoursAspectPolicy) {
  HostTensor x = randomInts({1, 1, 3, 4}, 34, -1000000000000LL, 1000000000000LL);
  auto y = runNode("Resize", {given("x", x), omitted(), omitted(), given("sizes", ints1d({6, 7}))}, [](onnx::NodeProto& n) {
    ModelBuilder::setInts(n, "axes", {2, 3});
    ModelBuilder::setString(n, "keep_aspect_ratio_policy", "not_larger");
    ModelBuilder::setString(n, "nearest_mode", "floor");
    ModelBuilder::setString(n, "coordinate_transformation_mode", "asymmetric");
  }, 1, 18)[0];
  // not_larger: scale = min(6/3, 7/4) = 1.75 for both axes, so the output is round(5.25) x 7.
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 1, 5, 7}));
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 7; ++j)
      ASSERT_EQ(y.data<int64_t>()[i * 7 + j], x.data<int64_t>()[int64_t(std::floor(i / 1.75)) * 4 + int64_t(std::floor(j / 1.75))]);
}

}  // namespace
