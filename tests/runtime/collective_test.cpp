// The collective layers (kiln.AllReduce, ...) on the CPU backend: N ranks as threads of this
// process, each running its own engine (loaded from the same plan bytes) through its member of an
// in-process communicator group; every rank's output is checked against the result worked out
// from all ranks' inputs. Also: a stalled or failed rank gives a clear error, never a hang, and
// bad attributes fail the build naming the layer.
#include <kiln/builder.h>
#include <kiln/communicator.h>
#include <kiln/error.h>
#include <kiln/runtime.h>

#include "common/collective_cases.h"
#include "common/test_models.h"
#include "plan/engine_plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

using namespace kiln;

namespace {

using Attrs = test::CollectiveAttrs;
using test::collectiveNetwork;
using Case = test::CollectiveCase;
const auto& rankInput = test::collectiveRankInput;
const auto& valuesOf = test::collectiveValues;
const auto& expectClose = test::expectCollectiveClose;

std::vector<uint8_t> buildPlan(const Network& net) { return Builder().build(net, BuilderConfig{}).plan; }

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

void checkCase(const Case& c, DataType type, int ranks) {
  test::checkCollectiveCase(
      c, type, ranks, uint32_t(1000 * ranks), [](const Network& net, DataType) { return buildPlan(net); },
      [](const std::vector<uint8_t>& plan, const std::vector<HostTensor>& inputs) { return runRanks(plan, inputs); });
}

}  // namespace

TEST(Collectives, EveryLayerMatchesTheReferenceOnOneToFourRanks) {
  for (int ranks = 1; ranks <= 4; ++ranks)
    for (const Case& c : test::collectiveCases(ranks)) checkCase(c, DataType::kFloat32, ranks);
}

TEST(Collectives, NarrowFloatsAndIntegers) {
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16, DataType::kInt32, DataType::kInt64})
    for (int ranks : {2, 3})
      for (const Case& c : test::collectiveCases(ranks)) {
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

namespace {

// A communicator that says it exchanges device buffers (as NCCL's does) and must never be called.
class DeviceBufferCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::chrono::milliseconds timeout() const override { return std::chrono::seconds(1); }
  std::string describe() const override { return "device rank 0 of 2"; }
  bool exchangesDeviceBuffers() const override { return true; }
  void allReduce(const void*, void*, int64_t, DataType, ReduceOp, void*) override { ADD_FAILURE(); }
  void allGather(const void*, void*, int64_t, DataType, void*) override { ADD_FAILURE(); }
  void reduceScatter(const void*, void*, int64_t, DataType, ReduceOp, void*) override { ADD_FAILURE(); }
  void broadcast(const void*, void*, int64_t, DataType, int, void*) override { ADD_FAILURE(); }
  void reduce(const void*, void*, int64_t, DataType, ReduceOp, int, void*) override { ADD_FAILURE(); }
  void gather(const void*, void*, int64_t, DataType, int, void*) override { ADD_FAILURE(); }
  void scatter(const void*, void*, int64_t, DataType, int, void*) override { ADD_FAILURE(); }
  void allToAll(const void*, void*, int64_t, DataType, void*) override { ADD_FAILURE(); }
  void abort(const std::string&) override {}
};

}  // namespace

TEST(Collectives, CpuLayersRefuseACommunicatorOfDeviceBuffers) {
  auto context =
      Runtime().load(buildPlan(collectiveNetwork("AllReduce", DataType::kFloat32, {5}, 2)))->createExecutionContext();
  context->setCommunicator(std::make_shared<DeviceBufferCommunicator>());
  try {
    context->run({{"x", rankInput(DataType::kFloat32, {5}, 5)}});
    FAIL() << "a CPU layer must not hand host memory to a device communicator";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("AllReduce_layer"), std::string::npos) << message;
    EXPECT_NE(message.find("exchanges device buffers"), std::string::npos) << message;
  }
}

TEST(Collectives, DeviceEnginesReportTheirCollectivesAsSynchronising) {
  // On a device backend the communicator waits for each collective on the host, so the engine
  // cannot be captured in a CUDA graph; the report names the layer. CPU engines are unaffected.
  const Network net = collectiveNetwork("AllGather", DataType::kFloat32, {4, 3}, 2, {{"axis", int64_t(1)}});
  BuilderConfig device;
  device.backend = BackendKind::kTestDevice;
  device.strictDevice = true;
  const BuildResult built = Builder().build(net, device);
  EXPECT_FALSE(built.report.graphCapturable());
  EXPECT_EQ(built.report.synchronizingLayers, std::vector<std::string>{"AllGather_layer"});
  bool warned = false;
  for (const auto& w : built.report.warnings) warned = warned || w.find("collectives") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_TRUE(Builder().build(net, BuilderConfig{}).report.graphCapturable());
  // It still runs there, on two ranks of the in-process group (the test device hands the CPU
  // kernels host addresses).
  std::vector<HostTensor> inputs{rankInput(DataType::kFloat32, {4, 3}, 11), rankInput(DataType::kFloat32, {4, 3}, 12)};
  const auto outputs = runRanks(built.plan, inputs);
  const Case c{"AllGather", {4, 3}, {{"axis", int64_t(1)}}};
  const auto want = test::expectedCollectiveOutputs(c, {valuesOf(inputs[0]), valuesOf(inputs[1])});
  for (size_t r = 0; r < 2; ++r) expectClose(valuesOf(outputs[r]), want[r], DataType::kFloat32, "test device");
}
