#include "common/collective_cases.h"

#include "runtime/precision_convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace kiln::test {
namespace {

double combine(double a, double b, const std::string& op) {
  if (op == "sum") return a + b;
  if (op == "prod") return a * b;
  if (op == "max") return std::max(a, b);
  return std::min(a, b);
}

// Element-wise reduction over ranks in rank order.
std::vector<double> reduceRanks(const std::vector<std::vector<double>>& x, const std::string& op) {
  std::vector<double> out = x[0];
  for (size_t r = 1; r < x.size(); ++r)
    for (size_t i = 0; i < out.size(); ++i) out[i] = combine(out[i], x[r][i], op);
  return out;
}

struct AxisSplit {
  int64_t outer = 1, rows = 1, inner = 1;
};
AxisSplit splitAt(const std::vector<int64_t>& dims, size_t axis) {
  AxisSplit s;
  for (size_t d = 0; d < axis; ++d) s.outer *= dims[d];
  s.rows = dims[axis];
  for (size_t d = axis + 1; d < dims.size(); ++d) s.inner *= dims[d];
  return s;
}

// The element of x [outer, rows, inner] at (o, row, i).
double at(const std::vector<double>& x, const AxisSplit& s, int64_t o, int64_t row, int64_t i) {
  return x[size_t((o * s.rows + row) * s.inner + i)];
}

// Dims whose axis 1 holds `ranks` slices of 3 rows (odd sizes around it).
std::vector<int64_t> splittable(int ranks) { return {3, 3 * ranks, 5}; }

}  // namespace

Network collectiveNetwork(const std::string& op, DataType type, std::vector<int64_t> dims, int64_t worldSize,
                          CollectiveAttrs attrs) {
  Network net;
  net.addInput("x", type, Shape::fromDims(dims));
  Layer layer;
  layer.name = op + "_layer";
  layer.opType = op;
  layer.domain = "kiln";
  layer.opsetVersion = 1;
  layer.inputs = {"x"};
  layer.outputs = {"y"};
  layer.attributes = std::move(attrs);
  layer.attributes["world_size"] = worldSize;
  net.addTensor("y");
  net.addLayer(layer);
  net.markOutput("y");
  return net;
}

HostTensor collectiveRankInput(DataType type, const std::vector<int64_t>& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t n = elementCount(dims);
  if (type == DataType::kInt32 || type == DataType::kInt64) {
    std::uniform_int_distribution<int> dist(1, 9);
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = (rng() & 1 ? 1 : -1) * dist(rng);
    if (type == DataType::kInt64) return HostTensor::fromVector<int64_t>(dims, v);
    return HostTensor::fromVector<int32_t>(dims, std::vector<int32_t>(v.begin(), v.end()));
  }
  std::uniform_real_distribution<float> dist(0.5f, 1.5f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = (rng() & 1 ? 1.0f : -1.0f) * dist(rng);
  HostTensor wide = HostTensor::fromVector<float>(dims, v);
  if (type == DataType::kFloat32) return wide;
  HostTensor narrow(type, dims);
  convertFloatStorage(DataType::kFloat32, wide.rawData(), type, narrow.rawData(), n);
  return narrow;
}

std::vector<double> collectiveValues(const HostTensor& t) {
  std::vector<double> out(static_cast<size_t>(t.elementCount()));
  switch (t.dtype()) {
    case DataType::kInt32:
      std::copy(t.data<int32_t>(), t.data<int32_t>() + out.size(), out.begin());
      break;
    case DataType::kInt64:
      std::copy(t.data<int64_t>(), t.data<int64_t>() + out.size(), out.begin());
      break;
    default: {
      std::vector<float> wide(out.size());
      convertFloatStorage(t.dtype(), t.rawData(), DataType::kFloat32, wide.data(), t.elementCount());
      std::copy(wide.begin(), wide.end(), out.begin());
    }
  }
  return out;
}

std::string CollectiveCase::describe(DataType type, int ranks) const {
  std::string text =
      op + " " + std::string(toString(type)) + " on " + std::to_string(ranks) + " ranks, dims " + dimsToString(dims);
  for (const auto& [name, value] : attrs) {
    text += ", " + name + " ";
    if (const auto* s = value.get<std::string>()) text += *s;
    if (const auto* i = value.get<int64_t>()) text += std::to_string(*i);
  }
  return text;
}

std::vector<CollectiveCase> collectiveCases(int ranks) {
  const auto d = splittable(ranks);
  return {
      {"AllReduce", {7, 5}, {{"reduction", std::string("sum")}}},
      {"AllReduce", {13}, {{"reduction", std::string("max")}}},
      {"AllReduce", {2, 3, 5}, {{"reduction", std::string("min")}}},
      {"AllReduce", {11}, {{"reduction", std::string("prod")}}},
      {"AllGather", {3, 5}, {{"axis", int64_t(0)}}},
      {"AllGather", {3, 2, 5}, {{"axis", int64_t(1)}}},
      {"AllGather", {3, 5}, {{"axis", int64_t(-1)}}},
      {"ReduceScatter", {3 * ranks, 7}, {{"axis", int64_t(0)}}},
      {"ReduceScatter", d, {{"axis", int64_t(1)}, {"reduction", std::string("max")}}},
      {"Broadcast", {5, 3}, {{"root", int64_t(ranks - 1)}}},
      {"Reduce", {9}, {{"root", int64_t(ranks / 2)}, {"reduction", std::string("sum")}}},
      {"AllToAll", {3 * ranks, 5}, {{"axis", int64_t(0)}}},
      {"AllToAll", d, {{"axis", int64_t(1)}}},
      {"Gather", {3, 2, 5}, {{"axis", int64_t(1)}, {"root", int64_t(ranks - 1)}}},
      {"Gather", {7}, {{"root", int64_t(0)}}},
      {"Scatter", d, {{"axis", int64_t(-2)}, {"root", int64_t(ranks / 2)}}},
      {"Scatter", {3 * ranks, 2}, {{"root", int64_t(ranks - 1)}}},
  };
}

std::vector<std::vector<double>> expectedCollectiveOutputs(const CollectiveCase& c,
                                                           const std::vector<std::vector<double>>& x) {
  const int64_t n = int64_t(x.size());
  const std::string reduction = c.attrs.count("reduction") ? *c.attrs.at("reduction").get<std::string>() : "sum";
  const int64_t root = c.attrs.count("root") ? *c.attrs.at("root").get<int64_t>() : 0;
  int64_t axis = c.attrs.count("axis") ? *c.attrs.at("axis").get<int64_t>() : 0;
  if (axis < 0) axis += int64_t(c.dims.size());
  const AxisSplit s = splitAt(c.dims, size_t(axis));
  std::vector<std::vector<double>> out(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    std::vector<double>& y = out[size_t(r)];
    if (c.op == "AllReduce") y = reduceRanks(x, reduction);
    if (c.op == "Broadcast") y = x[size_t(root)];
    if (c.op == "Reduce") y = r == root ? reduceRanks(x, reduction) : x[size_t(r)];
    if (c.op == "Gather" && r != root) y.assign(x[0].size() * size_t(n), 0.0);
    if (c.op == "AllGather" || (c.op == "Gather" && r == root))  // [outer, n · rows, inner]: rank q's rows at q · rows
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t q = 0; q < n; ++q)
          for (int64_t row = 0; row < s.rows; ++row)
            for (int64_t i = 0; i < s.inner; ++i) y.push_back(at(x[size_t(q)], s, o, row, i));
    if (c.op == "ReduceScatter" || c.op == "Scatter") {  // slice r (rows/n of them) of the reduction / root's X
      const std::vector<double> all = c.op == "Scatter" ? x[size_t(root)] : reduceRanks(x, reduction);
      const int64_t rows = s.rows / n;
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t row = r * rows; row < (r + 1) * rows; ++row)
          for (int64_t i = 0; i < s.inner; ++i) y.push_back(at(all, s, o, row, i));
    }
    if (c.op == "AllToAll") {  // slice q of the output is rank q's slice r
      const int64_t rows = s.rows / n;
      y.resize(x[0].size());
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t q = 0; q < n; ++q)
          for (int64_t row = 0; row < rows; ++row)
            for (int64_t i = 0; i < s.inner; ++i)
              y[size_t((o * s.rows + q * rows + row) * s.inner + i)] = at(x[size_t(q)], s, o, r * rows + row, i);
    }
  }
  return out;
}

void expectCollectiveClose(const std::vector<double>& got, const std::vector<double>& want, DataType type,
                           const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double rtol = type == DataType::kFloat16    ? 2e-3
                      : type == DataType::kBFloat16 ? 1e-2
                      : type == DataType::kFloat32  ? 1e-6
                                                    : 0;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - want[i]), rtol * std::abs(want[i]) + (rtol ? 1e-6 : 0))
        << what << " element " << i << ": got " << got[i] << ", want " << want[i];
}

void checkCollectiveCase(const CollectiveCase& c, DataType type, int ranks, uint32_t seed,
                         const CollectivePlanBuilder& build, const CollectiveRanksRunner& runRanks) {
  const std::string what = c.describe(type, ranks);
  const auto plan = build(collectiveNetwork(c.op, type, c.dims, ranks, c.attrs), type);
  std::vector<HostTensor> inputs;
  std::vector<std::vector<double>> values;
  for (int r = 0; r < ranks; ++r) {
    inputs.push_back(collectiveRankInput(type, c.dims, seed + uint32_t(17 * r + c.dims.size())));
    values.push_back(collectiveValues(inputs.back()));
  }
  const auto outputs = runRanks(plan, inputs);
  const auto want = expectedCollectiveOutputs(c, values);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(outputs[size_t(r)].dtype(), type) << what;
    expectCollectiveClose(collectiveValues(outputs[size_t(r)]), want[size_t(r)], type,
                          what + ", rank " + std::to_string(r));
  }
}

}  // namespace kiln::test
