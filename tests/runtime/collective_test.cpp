// The collective layers (kiln.AllReduce, ...) on the CPU backend: N ranks as threads of this
// process, each running its own engine (loaded from the same plan bytes) through its member of an
// in-process communicator group; every rank's output is checked against the result worked out
// from all ranks' inputs. Also: a stalled or failed rank gives a clear error, never a hang, and
// bad attributes fail the build naming the layer.
#include <kiln/builder.h>
#include <kiln/communicator.h>
#include <kiln/error.h>
#include <kiln/runtime.h>

#include "common/test_models.h"
#include "plan/engine_plan.h"
#include "runtime/precision_convert.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <random>
#include <thread>

using namespace kiln;

namespace {

using Attrs = std::map<std::string, Attribute>;

// x -> kiln.<op> -> y, with `world_size` and the other attributes given.
Network collectiveNetwork(const std::string& op, DataType type, std::vector<int64_t> dims, int64_t worldSize,
                          Attrs attrs = {}) {
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

std::vector<uint8_t> buildPlan(const Network& net) { return Builder().build(net, BuilderConfig{}).plan; }

// Random non-zero inputs per rank: floats in [0.5, 1.5) (products stay tame) with random signs,
// integers in [-9, 9] without zero.
HostTensor rankInput(DataType type, const std::vector<int64_t>& dims, uint32_t seed) {
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

// Values as doubles (fp16 / bf16 widened exactly).
std::vector<double> valuesOf(const HostTensor& t) {
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

// Runs `plan` on `ranks` threads, rank r with inputs[r]; returns each rank's y (or rethrows the
// first rank's error). `before` runs on each rank's thread before its run (to stall one).
std::vector<HostTensor> runRanks(const std::vector<uint8_t>& plan, const std::vector<HostTensor>& inputs,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(20),
                                 std::function<void(int)> before = {}) {
  const int ranks = int(inputs.size());
  auto comms = createInProcessCommunicators(ranks, timeout);
  std::vector<HostTensor> outputs(static_cast<size_t>(ranks));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        auto engine = Runtime().load(plan);  // each rank its own engine
        auto context = engine->createExecutionContext();
        context->setCommunicator(comms[size_t(r)]);
        if (before) before(r);
        outputs[size_t(r)] = context->run({{"x", inputs[size_t(r)]}}).at("y");
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return outputs;
}

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

// Whether `got` equals `want` within the storage type's rounding of the result.
void expectClose(const std::vector<double>& got, const std::vector<double>& want, DataType type,
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

struct Case {
  std::string op;
  std::vector<int64_t> dims;
  Attrs attrs;
};

// Every rank's expected output for `c` given all ranks' inputs.
std::vector<std::vector<double>> expected(const Case& c, const std::vector<std::vector<double>>& x) {
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

// Dims whose axis 1 holds `ranks` slices of 3 rows (odd sizes around it).
std::vector<int64_t> splittable(int ranks) { return {3, 3 * ranks, 5}; }

std::vector<Case> casesFor(int ranks) {
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

void checkCase(const Case& c, DataType type, int ranks) {
  const std::string what = c.op + " " + std::string(toString(type)) + " on " + std::to_string(ranks) + " ranks, dims " +
                           dimsToString(c.dims);
  const auto plan = buildPlan(collectiveNetwork(c.op, type, c.dims, ranks, c.attrs));
  std::vector<HostTensor> inputs;
  std::vector<std::vector<double>> values;
  for (int r = 0; r < ranks; ++r) {
    inputs.push_back(rankInput(type, c.dims, uint32_t(1000 * ranks + 17 * r + c.dims.size())));
    values.push_back(valuesOf(inputs.back()));
  }
  const auto outputs = runRanks(plan, inputs);
  const auto want = expected(c, values);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(outputs[size_t(r)].dtype(), type) << what;
    expectClose(valuesOf(outputs[size_t(r)]), want[size_t(r)], type, what + ", rank " + std::to_string(r));
  }
}

}  // namespace

TEST(Collectives, EveryLayerMatchesTheReferenceOnOneToFourRanks) {
  for (int ranks = 1; ranks <= 4; ++ranks)
    for (const Case& c : casesFor(ranks)) checkCase(c, DataType::kFloat32, ranks);
}

TEST(Collectives, NarrowFloatsAndIntegers) {
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16, DataType::kInt32, DataType::kInt64})
    for (int ranks : {2, 3})
      for (const Case& c : casesFor(ranks)) {
        // Products of integers in [-9, 9] stay exact; fp16 / bf16 products of 3 ranks too coarse to compare.
        if (c.attrs.count("reduction") && *c.attrs.at("reduction").get<std::string>() == "prod" &&
            (type == DataType::kFloat16 || type == DataType::kBFloat16))
          continue;
        checkCase(c, type, ranks);
      }
}

TEST(Collectives, SeveralCollectivesInOneEngineRunInOrder) {
  // x [4, 6] -> AllGather(axis 1) [4, 6n] -> ReduceScatter(axis 1) [4, 6] -> AllReduce(max).
  const int ranks = 3;
  Network net;
  net.addInput("x", DataType::kFloat32, Shape::fromDims({4, 6}));
  auto add = [&](const std::string& op, const std::string& in, const std::string& out, Attrs attrs) {
    Layer l;
    l.name = op;
    l.opType = op;
    l.domain = "kiln";
    l.inputs = {in};
    l.outputs = {out};
    l.attributes = std::move(attrs);
    l.attributes["world_size"] = int64_t(ranks);
    net.addTensor(out);
    net.addLayer(l);
  };
  add("AllGather", "x", "g", {{"axis", int64_t(1)}});
  add("ReduceScatter", "g", "s", {{"axis", int64_t(1)}});
  add("AllReduce", "s", "y", {{"reduction", std::string("max")}});
  net.markOutput("y");
  const auto plan = buildPlan(net);
  std::vector<HostTensor> inputs;
  std::vector<std::vector<double>> x;
  for (int r = 0; r < ranks; ++r) {
    inputs.push_back(rankInput(DataType::kFloat32, {4, 6}, uint32_t(77 + r)));
    x.push_back(valuesOf(inputs.back()));
  }
  const auto outputs = runRanks(plan, inputs);
  // The gather is the same on every rank, so the scatter's slice r is n times x_r; the max of those.
  std::vector<double> want(24, -1e30);
  for (int r = 0; r < ranks; ++r)
    for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(want[i], double(float(ranks * float(x[size_t(r)][i]))));
  for (int r = 0; r < ranks; ++r)
    expectClose(valuesOf(outputs[size_t(r)]), want, DataType::kFloat32, "rank " + std::to_string(r));
}

TEST(Collectives, StalledRankTimesOutNamingTheCollectiveAndTheMissingRank) {
  const auto plan = buildPlan(collectiveNetwork("AllReduce", DataType::kFloat32, {5}, 3));
  std::vector<HostTensor> inputs;
  for (int r = 0; r < 3; ++r) inputs.push_back(rankInput(DataType::kFloat32, {5}, uint32_t(r + 1)));
  const auto start = std::chrono::steady_clock::now();
  try {
    runRanks(plan, inputs, std::chrono::milliseconds(300), [](int r) {
      if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // arrives long after
    });
    FAIL() << "a stalled rank must fail the run";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("AllReduce"), std::string::npos) << message;
    EXPECT_NE(message.find("timed out after 300 ms"), std::string::npos) << message;
    EXPECT_NE(message.find("rank(s) 2"), std::string::npos) << message;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Collectives, AFailedRankFailsTheOthersAtOnce) {
  // Rank 1 is given no input, so its run throws before the collective; it aborts the group and
  // rank 0 fails with its reason long before the 60 s timeout.
  const auto plan = buildPlan(collectiveNetwork("AllGather", DataType::kFloat32, {4}, 2));
  auto comms = createInProcessCommunicators(2, std::chrono::seconds(60));
  std::string rank0Error;
  const auto start = std::chrono::steady_clock::now();
  std::thread rank0([&] {
    auto context = Runtime().load(plan)->createExecutionContext();
    context->setCommunicator(comms[0]);
    try {
      context->run({{"x", rankInput(DataType::kFloat32, {4}, 1)}});
    } catch (const Error& e) {
      rank0Error = e.what();
    }
  });
  auto context = Runtime().load(plan)->createExecutionContext();
  context->setCommunicator(comms[1]);
  EXPECT_THROW(context->run({{"x", rankInput(DataType::kFloat32, {7}, 2)}}), Error);  // wrong shape
  rank0.join();
  EXPECT_NE(rank0Error.find("rank 1 failed"), std::string::npos) << rank0Error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(Collectives, ACommunicatorOfAnotherSizeIsRefused) {
  const auto plan = buildPlan(collectiveNetwork("AllReduce", DataType::kFloat32, {5}, 2));
  auto context = Runtime().load(plan)->createExecutionContext();
  try {
    context->setCommunicator(createInProcessCommunicators(3)[0]);
    FAIL() << "world_size 2 against 3 ranks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("world_size 2"), std::string::npos) << e.what();
  }
  // Without a communicator, world_size 2 cannot run; world_size 1 runs as a copy.
  EXPECT_THROW(context->run({{"x", rankInput(DataType::kFloat32, {5}, 3)}}), Error);
  const HostTensor x = rankInput(DataType::kFloat32, {5}, 4);
  const auto single = Runtime().load(buildPlan(collectiveNetwork("AllReduce", DataType::kFloat32, {5}, 1)));
  EXPECT_EQ(valuesOf(single->createExecutionContext()->run({{"x", x}}).at("y")), valuesOf(x));
}

TEST(Collectives, TheLayersSurviveThePlan) {
  const auto plan = buildPlan(collectiveNetwork("ReduceScatter", DataType::kFloat32, {6, 4}, 3,
                                                {{"axis", int64_t(0)}, {"reduction", std::string("min")}}));
  const auto engine = Runtime().load(plan);
  const Layer* found = nullptr;
  for (const Layer& l : engine->plan().network->layers())
    if (l.opType == "ReduceScatter") found = &l;
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->domain, "kiln");
  EXPECT_EQ(found->attrInt("world_size"), 3);
  EXPECT_EQ(found->attrString("reduction"), "min");
  auto context = engine->createExecutionContext();
  context->setInputShape("x", {6, 4});
  EXPECT_EQ(context->tensorShape("y"), (std::vector<int64_t>{2, 4}));
}

TEST(Collectives, BadAttributesFailTheBuildNamingTheLayer) {
  auto buildError = [](const Network& net) -> std::string {
    try {
      buildPlan(net);
    } catch (const Error& e) {
      return e.what();
    }
    return "built";
  };
  auto contains = [](const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; };
  std::string e = buildError(collectiveNetwork("AllGather", DataType::kFloat32, {3, 5}, 2, {{"axis", int64_t(2)}}));
  EXPECT_TRUE(contains(e, "AllGather_layer") && contains(e, "axis")) << e;
  e = buildError(collectiveNetwork("AllReduce", DataType::kFloat32, {3}, 2, {{"reduction", std::string("mean")}}));
  EXPECT_TRUE(contains(e, "AllReduce_layer") && contains(e, "'mean'")) << e;
  e = buildError(collectiveNetwork("ReduceScatter", DataType::kFloat32, {5, 2}, 2));
  EXPECT_TRUE(contains(e, "ReduceScatter_layer") && contains(e, "does not divide")) << e;
  e = buildError(collectiveNetwork("Broadcast", DataType::kFloat32, {3}, 2, {{"root", int64_t(2)}}));
  EXPECT_TRUE(contains(e, "root 2")) << e;
  e = buildError(collectiveNetwork("Scatter", DataType::kFloat32, {4, 3}, 2, {{"root", int64_t(-1)}}));
  EXPECT_TRUE(contains(e, "Scatter_layer") && contains(e, "root -1")) << e;
  e = buildError(collectiveNetwork("Scatter", DataType::kFloat32, {4, 3}, 2, {{"axis", int64_t(1)}}));
  EXPECT_TRUE(contains(e, "does not divide")) << e;
  e = buildError(collectiveNetwork("AllReduce", DataType::kFloat32, {3}, 0));
  EXPECT_TRUE(contains(e, "world_size must be 1 or more")) << e;
  e = buildError(collectiveNetwork("AllReduce", DataType::kBool, {3}, 2));
  EXPECT_TRUE(contains(e, "not bool")) << e;
  // Two collectives split for different world sizes in one engine.
  Network mixed = collectiveNetwork("AllReduce", DataType::kFloat32, {4}, 2);
  Layer second = mixed.layers()[0];
  second.name = "second";
  second.inputs = {"y"};
  second.outputs = {"z"};
  second.attributes["world_size"] = int64_t(4);
  mixed.addTensor("z");
  mixed.addLayer(second);
  mixed.markOutput("z");
  e = buildError(mixed);
  EXPECT_TRUE(contains(e, "world_size 4") && contains(e, "second")) << e;
}
