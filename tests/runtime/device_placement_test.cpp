// The device contract, checked without a GPU through the test device backend ("cpu-device"): its
// memory faults when the runtime touches it directly, engines built for it get Copy and Cast layers
// where neighbours disagree, layers it refuses fall back to the CPU (or fail the build with
// --strict-device), shape arithmetic runs on the host before launch, data-dependent layers
// synchronise, and every such engine gives the reference's values.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include "backends/backend_registry.h"
#include "builder/conversion_layers.h"
#include "common/test_models.h"
#include "ops/conversion.h"
#include "plan/engine_plan.h"
#include "plan/plan_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

// Sets KILN_TEST_DEVICE_REFUSE for one scope.
class RefusedOps {
 public:
  explicit RefusedOps(const char* ops) { setenv("KILN_TEST_DEVICE_REFUSE", ops, 1); }
  ~RefusedOps() { unsetenv("KILN_TEST_DEVICE_REFUSE"); }
};

// conv -> relu -> maxpool -> flatten -> gemm -> softmax with a dynamic batch.
std::shared_ptr<Network> smallCnn() {
  ModelBuilder mb;
  mb.symbolicInput("x", kFloat, {"N", "3", "8", "8"}).output("y");
  mb.initializer("w", test::randomFloats({4, 3, 3, 3}, 1, -0.5f, 0.5f)).initializer("b", test::randomFloats({4}, 2));
  mb.initializer("fc", test::randomFloats({64, 5}, 3, -0.3f, 0.3f)).initializer("fcb", test::randomFloats({5}, 4));
  ModelBuilder::setInts(mb.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c"}, {"r"}, "relu");
  auto& pool = mb.node("MaxPool", {"r"}, {"p"}, "pool");
  ModelBuilder::setInts(pool, "kernel_shape", {2, 2});
  ModelBuilder::setInts(pool, "strides", {2, 2});
  mb.node("Flatten", {"p"}, {"f"}, "flatten");
  mb.node("Gemm", {"f", "fc", "fcb"}, {"g"}, "fc");
  mb.node("Softmax", {"g"}, {"y"}, "softmax");
  return OnnxImporter().importBytes(mb.bytes());
}

BuilderConfig deviceConfig(bool fp16 = false) {
  BuilderConfig config;
  config.backend = BackendKind::kTestDevice;
  config.allowFP16 = fp16;
  config.profiles.push_back({{{"x", ShapeRange{{1, 3, 8, 8}, {2, 3, 8, 8}, {4, 3, 8, 8}}}}});
  return config;
}

double relativeL2(const HostTensor& got, const HostTensor& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.elementCount(); ++i) {
    const double d = double(got.data<float>()[i]) - want.data<float>()[i];
    num += d * d;
    den += double(want.data<float>()[i]) * want.data<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

void expectMatchesReference(const std::shared_ptr<Network>& network, const Engine& engine, double tolerance,
                            std::initializer_list<int64_t> batches) {
  auto context = engine.createExecutionContext();
  uint32_t seed = 50;
  for (int64_t n : batches) {
    const HostTensor x = test::randomFloats({n, 3, 8, 8}, ++seed);
    const HostTensor want = ReferenceExecutor(network).run({{"x", Value(x)}}).at("y").tensor;
    const HostTensor got = context->run({{"x", x}}).at("y");
    ASSERT_EQ(got.dims(), want.dims()) << "batch " << n;
    EXPECT_LE(relativeL2(got, want), tolerance) << "batch " << n;
  }
}

int countRole(const BuildReport& report, const std::string& role) {
  int n = 0;
  for (const auto& l : report.layers) n += l.role == role;
  return n;
}

}  // namespace

TEST(TestDevice, ItsMemoryFaultsWhenTouchedDirectlyAndItsStreamsCopyInAndOut) {
  auto device = BackendRegistry::instance().get("cpu-device");
  EXPECT_EQ(device->memorySpace(), MemorySpace::kDevice);
  DeviceBuffer memory = allocateBuffer(device->allocator(), 64);
  EXPECT_DEATH(*static_cast<volatile char*>(memory.get()) = 1, "");
  auto stream = device->createStream();
  std::vector<uint8_t> in(64), out(64, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 7 + 1);
  stream->copy(memory.get(), in.data(), in.size());
  stream->copy(out.data(), memory.get(), out.size());
  EXPECT_EQ(in, out);
  // Accesses past an allocation are refused, not carried out.
  EXPECT_THROW(stream->copy(out.data(), memory.get(), 65), Error);
}

TEST(TestDevice, EnginesGetCastLayersAndMatchTheReference) {
  auto network = smallCnn();
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    BuildResult built = Builder().build(*network, deviceConfig(fp16));
    auto engine = Runtime().load(built.plan);
    for (const auto& l : built.report.layers) {
      EXPECT_EQ(l.backend, "cpu-device") << l.name;
      EXPECT_TRUE(l.fallback.empty()) << l.name;
    }
    EXPECT_EQ(countRole(built.report, "copy"), 0);
    // fp16 layers read and write fp16: a Cast after the fp32 input and one before the fp32 output.
    EXPECT_EQ(countRole(built.report, "cast"), fp16 ? 2 : 0);
    EXPECT_EQ(engine->tensorMemorySpace("x"), "device");
    EXPECT_EQ(engine->tensorMemorySpace("y"), "device");
    EXPECT_TRUE(built.report.graphCapturable());
    expectMatchesReference(network, *engine, fp16 ? 1e-2 : 1e-5, {1, 3, 4, 2});
  }
}

// A profiled context (its device streams held back while each step is enqueued, its events around
// each layer) reports every layer once a run, run after run, and computes what it computes without
// a profiler.
TEST(TestDevice, ProfiledRunsTimeEveryLayerAndKeepTheirValues) {
  struct CountingProfiler : Profiler {
    std::map<std::string, std::vector<double>> times;
    void reportLayerTime(const std::string& layer, double ms) override { times[layer].push_back(ms); }
  };
  auto network = smallCnn();
  BuildResult built = Builder().build(*network, deviceConfig());
  auto engine = Runtime().load(built.plan);
  auto context = engine->createExecutionContext();
  CountingProfiler profiler;
  context->setProfiler(&profiler);
  const HostTensor x = test::randomFloats({3, 3, 8, 8}, 77);
  const HostTensor want = ReferenceExecutor(network).run({{"x", Value(x)}}).at("y").tensor;
  for (int run = 0; run < 3; ++run) EXPECT_LT(relativeL2(context->run({{"x", x}}).at("y"), want), 1e-5);
  ASSERT_FALSE(profiler.times.empty());
  for (const auto& l : built.report.layers) {
    auto it = profiler.times.find(l.name);
    ASSERT_NE(it, profiler.times.end()) << l.name << " was not timed";
    EXPECT_EQ(it->second.size(), 3u) << l.name;
    for (double ms : it->second) EXPECT_TRUE(std::isfinite(ms) && ms >= 0) << l.name << ": " << ms;
  }
}

// A float32 weight read by an fp16 layer and by an fp32 one (Greater's bool output keeps it fp32):
// device steps read exactly their storage type, so each reader gets the weight in its own.
TEST(TestDevice, AWeightSharedByFp16AndFp32LayersIsStoredForEach) {
  ModelBuilder mb;
  mb.input("a", kFloat, {2, 3}).output("y").output("g");
  mb.initializer("w", test::randomFloats({2, 3}, 5));
  ModelBuilder::setInt(mb.node("Concat", {"a", "w"}, {"y"}, "concat"), "axis", 0);
  mb.node("Greater", {"a", "w"}, {"g"}, "greater");
  auto network = OnnxImporter().importBytes(mb.bytes());
  BuilderConfig config;
  config.backend = BackendKind::kTestDevice;
  config.allowFP16 = true;
  BuildResult built = Builder().build(*network, config);
  std::map<std::string, std::string> weightType;
  for (const auto& l : built.report.layers)
    if (l.name == "concat" || l.name == "greater") weightType[l.name] = l.inputs.at(1).dtype;
  EXPECT_EQ(weightType["concat"], "float16");
  EXPECT_EQ(weightType["greater"], "float32");
  const HostTensor a = test::randomFloats({2, 3}, 6);
  const auto want = ReferenceExecutor(network).run({{"a", Value(a)}});
  const auto got = Runtime().load(built.plan)->createExecutionContext()->run({{"a", a}});
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(got.at("y").data<float>()[6 + i], want.at("y").tensor.data<float>()[6 + i], 1e-3) << i;
    EXPECT_EQ(got.at("g").data<bool>()[i], want.at("g").tensor.data<bool>()[i]) << i;
  }
}

// Weights that shape inference reads stay float32 in an fp16 engine: 1.1 in fp16 is 1.0996, which
// would make Resize's output 10 wide instead of the model's 11.
TEST(TestDevice, ShapeParametersKeepTheirValuesInFp16Engines) {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, 1, 10, 10}).output("y");
  mb.initializer("scales", HostTensor::fromVector<float>({4}, {1, 1, 1.1f, 1.1f}));
  mb.node("Resize", {"x", "", "scales"}, {"y"}, "resize");
  auto network = OnnxImporter().importBytes(mb.bytes());
  BuilderConfig config;
  config.backend = BackendKind::kTestDevice;
  config.allowFP16 = true;
  BuildResult built = Builder().build(*network, config);
  for (const auto& l : built.report.layers)
    if (l.name == "resize") {
      EXPECT_EQ(l.precision, "fp16");
      EXPECT_EQ(l.inputs.at(2).dtype, "float32");
    }
  const HostTensor x = test::randomFloats({1, 1, 10, 10}, 7);
  const auto got = Runtime().load(built.plan)->createExecutionContext()->run({{"x", x}});
  EXPECT_EQ(got.at("y").dims(), (std::vector<int64_t>{1, 1, 11, 11}));
}

TEST(TestDevice, RefusedLayersFallBackToTheCpuBehindCopies) {
  RefusedOps refused("MaxPool,Softmax");
  auto network = smallCnn();
  BuildResult built = Builder().build(*network, deviceConfig(true));
  std::set<std::string> onCpu;
  for (const auto& l : built.report.layers)
    if (l.backend == "cpu" && l.role == "compute") {
      onCpu.insert(l.name);
      EXPECT_NE(l.fallback.find("KILN_TEST_DEVICE_REFUSE"), std::string::npos) << l.fallback;
    }
  EXPECT_EQ(onCpu, (std::set<std::string>{"pool", "softmax"}));
  // Device -> host before each CPU layer, host -> device after the pool; the softmax makes the
  // graph output on the host, which is copied to the device.
  EXPECT_EQ(countRole(built.report, "copy"), 4);
  EXPECT_FALSE(built.report.graphCapturable());
  bool warned = false;
  for (const auto& w : built.report.warnings) warned = warned || w.find("fall back") != std::string::npos;
  EXPECT_TRUE(warned);
  expectMatchesReference(network, *Runtime().load(built.plan), 1e-2, {2, 4, 1});
}

TEST(TestDevice, StrictDeviceFailsTheBuildNamingTheLayers) {
  RefusedOps refused("MaxPool");
  BuilderConfig config = deviceConfig();
  config.strictDevice = true;
  try {
    Builder().build(*smallCnn(), config);
    FAIL() << "expected the build to fail";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(what.find("'pool'"), std::string::npos) << what;
    EXPECT_NE(what.find("--strict-device"), std::string::npos) << what;
  }
}

// x -> Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape(x): the shape arithmetic runs on the
// host before launch, the Reshape on the device; the output's dims are known before it runs.
TEST(TestDevice, ShapeArithmeticRunsOnTheHostBeforeLaunch) {
  ModelBuilder mb;
  mb.symbolicInput("x", kFloat, {"N", "6", "4"}).output("y");
  mb.initializer("zero", HostTensor::fromVector<int64_t>({1}, {0}));
  mb.initializer("minus1", HostTensor::fromVector<int64_t>({1}, {-1}));
  mb.node("Shape", {"x"}, {"s"}, "shape");
  mb.node("Gather", {"s", "zero"}, {"n"}, "gather");
  mb.node("Concat", {"n", "minus1"}, {"target"}, "concat");
  ModelBuilder::setInt(mb.model().mutable_graph()->mutable_node(2)[0], "axis", 0);
  mb.node("Relu", {"x"}, {"r"}, "relu");
  mb.node("Reshape", {"r", "target"}, {"y"}, "reshape");
  auto network = OnnxImporter().importBytes(mb.bytes());
  BuilderConfig config;
  config.backend = BackendKind::kTestDevice;
  config.optimizationLevel = 0;
  config.profiles.push_back({{{"x", ShapeRange{{1, 6, 4}, {2, 6, 4}, {5, 6, 4}}}}});
  BuildResult built = Builder().build(*network, config);
  std::map<std::string, std::string> phase, backend;
  for (const auto& l : built.report.layers) {
    phase[l.name] = l.phase;
    backend[l.name] = l.backend;
  }
  EXPECT_EQ(phase["shape"], "shape");
  EXPECT_EQ(phase["gather"], "shape");
  EXPECT_EQ(phase["concat"], "shape");
  EXPECT_EQ(phase["reshape"], "launch");
  EXPECT_EQ(backend["reshape"], "cpu-device");
  EXPECT_TRUE(built.report.graphCapturable());
  auto engine = Runtime().load(built.plan);
  auto context = engine->createExecutionContext();
  for (int64_t n : {3, 1, 5}) {
    context->setInputShape("x", {n, 6, 4});
    EXPECT_EQ(context->tensorShape("y"), (std::vector<int64_t>{n, 24}));  // before any run
    const HostTensor x = test::randomFloats({n, 6, 4}, uint32_t(60 + n));
    const HostTensor y = context->run({{"x", x}}).at("y");
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{n, 24}));
    for (int64_t i = 0; i < y.elementCount(); ++i) ASSERT_EQ(y.data<float>()[i], std::max(0.0f, x.data<float>()[i]));
  }
}

// NonZero's output size depends on the data: it runs on the CPU, the engine synchronises there, and
// one context meets outputs of different sizes run after run.
TEST(TestDevice, DataDependentLayersSynchronise) {
  ModelBuilder mb;
  mb.input("x", kFloat, {3, 5}).output("y");
  mb.node("Relu", {"x"}, {"r"}, "relu");
  mb.node("NonZero", {"r"}, {"idx"}, "nonzero");
  mb.node("Transpose", {"idx"}, {"y"}, "transpose");
  auto network = OnnxImporter().importBytes(mb.bytes());
  BuilderConfig config;
  config.backend = BackendKind::kTestDevice;
  BuildResult built = Builder().build(*network, config);
  std::string nonzeroBackend, why;
  for (const auto& l : built.report.layers)
    if (l.name == "nonzero") nonzeroBackend = l.backend, why = l.dataDependent;
  EXPECT_EQ(nonzeroBackend, "cpu");
  EXPECT_NE(why.find("NonZero"), std::string::npos) << why;
  EXPECT_FALSE(built.report.graphCapturable());
  auto engine = Runtime().load(built.plan);
  auto context = engine->createExecutionContext();
  for (uint32_t seed : {70u, 71u, 72u}) {
    const HostTensor x = test::randomFloats({3, 5}, seed);
    const HostTensor want = ReferenceExecutor(network).run({{"x", Value(x)}}).at("y").tensor;
    const HostTensor got = context->run({{"x", x}}).at("y");
    ASSERT_EQ(got.dims(), want.dims()) << seed;
    EXPECT_EQ(std::memcmp(got.rawData(), want.rawData(), want.byteSize()), 0) << seed;
  }
}

// Where a reader wants another layout than its producer writes, a Reformat goes between them; where
// a device layer reads another storage type, a Cast; across memory spaces, a Copy.
TEST(Placement, ConversionLayersGoWhereNeighboursDisagree) {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, 2, 3, 4}).output("z");
  mb.node("Relu", {"x"}, {"y"}, "first");
  mb.node("Sigmoid", {"y"}, {"z"}, "second");
  auto network = OnnxImporter().importBytes(mb.bytes());
  network->inferShapes();
  auto device = BackendRegistry::instance().get("cpu-device");
  auto cpu = BackendRegistry::instance().get("cpu");
  std::vector<PlannedLayer> layers(2);
  layers[0].backend = "cpu";  // writes y linear, in fp32 on the host
  layers[0].tactic = "cpu.relu";
  layers[1].backend = "cpu-device";
  layers[1].precision = Precision::kFP16;
  layers[1].tactic = "cpu.sigmoid";
  layers[1].inputFormats = {TensorFormat::kNHWC};
  ShapeValuePlan shapes;
  shapes.inShapePhase.assign(2, false);
  shapes.dataDependent.assign(2, "");
  shapes.valueInputs = {{false}, {false}};
  std::map<std::string, PlannedTensor> tensors;
  placeTensorsAndConvert(*network, layers, tensors, shapes, PlacementBackends{*device, *cpu});
  std::vector<std::string> order;
  for (const Layer& l : network->layers()) order.push_back(l.domain.empty() ? l.opType : l.domain + "." + l.opType);
  // x arrives on the device and is copied to the host for the CPU layer; y goes to the device, is
  // cast to fp16 and re-laid out; z (fp16, the second layer's) is cast back to the declared fp32.
  EXPECT_EQ(order, (std::vector<std::string>{"kiln.Copy", "Relu", "kiln.Copy", "kiln.Cast", "kiln.Reformat",
                                             "Sigmoid", "kiln.Cast"}));
  EXPECT_EQ(network->outputs(), std::vector<std::string>{"z"});
  EXPECT_EQ(tensors.at("z").space, MemorySpace::kDevice);
  EXPECT_EQ(tensors.at("z").storage, DataType::kFloat32);
  const Layer& sigmoid = network->layers()[5];
  const PlannedTensor& in = tensors.at(sigmoid.inputs[0]);
  EXPECT_EQ(in.space, MemorySpace::kDevice);
  EXPECT_EQ(in.storage, DataType::kFloat16);
  EXPECT_EQ(in.format, TensorFormat::kNHWC);
  EXPECT_EQ(in.modelTensor, "y");
  EXPECT_TRUE(in.converted);
  network->validate();
}

TEST(PlanVersion, AnOlderPlanIsRefusedWithARebuildHint) {
  BuildResult built = Builder().build(*smallCnn(), deviceConfig());
  std::vector<uint8_t> old = built.plan;
  PlanHeader header;
  std::memcpy(&header, old.data(), sizeof header);
  header.formatVersion = 1;
  std::memcpy(old.data(), &header, sizeof header);
  try {
    Runtime().load(old);
    FAIL() << "a version 1 plan must be refused";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("format version 1"), std::string::npos) << what;
    EXPECT_NE(what.find("older"), std::string::npos) << what;
    EXPECT_NE(what.find("kiln build"), std::string::npos) << what;
  }
}

// Graph capture needs a backend that records (CUDA); elsewhere the second run with the same
// shapes and addresses says so (the first, the warm-up, runs as usual).
TEST(GraphCapture, BackendsThatCannotRecordSaySo) {
  BuilderConfig config = deviceConfig();
  config.backend = BackendKind::kCpu;
  auto engine = Runtime().load(Builder().build(*smallCnn(), config).plan);
  auto context = engine->createExecutionContext();
  context->setGraphCapture(true);
  const HostTensor x = test::randomFloats({2, 3, 8, 8}, 80);
  HostTensor y(DataType::kFloat32, {2, 5});
  context->setInputShape("x", x.dims());
  context->setTensorAddress("x", const_cast<void*>(x.rawData()));
  context->setTensorAddress("y", y.rawData());
  EXPECT_NO_THROW(context->execute());
  try {
    context->execute();
    FAIL() << "the CPU backend cannot record graphs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot record"), std::string::npos) << e.what();
  }
  context->setGraphCapture(false);
  EXPECT_NO_THROW(context->execute());
  const HostTensor want = ReferenceExecutor(smallCnn()).run({{"x", Value(x)}}).at("y").tensor;
  EXPECT_LE(relativeL2(y, want), 1e-5);
}
