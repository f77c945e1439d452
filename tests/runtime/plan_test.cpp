// Plan files: round trip, and every kind of damage gives a clear error instead of a crash.
#include <kiln/error.h>
#include <kiln/runtime.h>

#include "plan/engine_plan.h"
#include "plan/plan_format.h"
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace kiln;

namespace {

// A hand-made engine: y = Identity(x) with a constant and a subgraph-free layer list.
std::shared_ptr<EnginePlan> sampleDescription() {
  auto net = std::make_shared<Network>();
  net->addInput("x", DataType::kFloat32, Shape({Dim::symbol("N"), 4}));
  net->addConstant("w", test::randomFloats({4}, 3));
  Layer id;
  id.name = "id";
  id.opType = "Identity";
  id.opsetVersion = 17;
  id.inputs = {"x"};
  id.outputs = {"y"};
  id.attributes["note"] = std::string("kept");
  id.attributes["ints"] = std::vector<int64_t>{1, 2, 3};
  id.origins = {"onnx_id"};
  net->addLayer(id);
  net->markOutput("y");
  net->inferShapes();
  auto d = std::make_shared<EnginePlan>();
  d->info = {kPlanFormatVersion, "test", "cpu", "CPU", "", "storage=fp32"};
  d->network = net;
  d->layers.resize(1);
  d->layers[0].tactic = "cpu.identity";
  for (const char* name : {"x", "y"}) d->tensors[name] = {DataType::kFloat32, TensorFormat::kLinear, MemorySpace::kHost, name, false};
  d->profiles = {OptimizationProfile{{{"x", ShapeRange{{1, 4}, {2, 4}, {8, 4}}}}}};
  d->report.backend = "cpu";
  d->report.layers.push_back({"id", "Identity", "fp32", "cpu.identity", {}, {}, {"onnx_id"}});
  return d;
}

void expectPlanError(const std::vector<uint8_t>& bytes, const std::string& fragment) {
  try {
    readPlan(bytes);
    FAIL() << "expected a plan error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Plan, RoundTripKeepsNetworkDecisionsProfilesAndWeights) {
  auto d = sampleDescription();
  auto bytes = writePlan(*d);
  auto back = readPlan(bytes);
  ASSERT_EQ(back->network->layers().size(), 1u);
  const Layer& l = back->network->layers()[0];
  EXPECT_EQ(l.opType, "Identity");
  EXPECT_EQ(l.attrString("note"), "kept");
  EXPECT_EQ(l.attrInts("ints"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(l.origins, std::vector<std::string>{"onnx_id"});
  EXPECT_EQ(back->layers.at(0).tactic, "cpu.identity");
  EXPECT_EQ(back->layers.at(0).backend, "cpu");
  EXPECT_EQ(back->tensor("y").space, MemorySpace::kHost);
  ASSERT_EQ(back->profiles.size(), 1u);
  EXPECT_EQ(back->profiles[0].inputs.at("x").max, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(back->network->tensor("x").shape.toString(), "[N,4]");
  const HostTensor& w = *back->network->tensor("w").constant;
  const HostTensor& w0 = *d->network->tensor("w").constant;
  ASSERT_EQ(w.elementCount(), 4);
  EXPECT_EQ(std::memcmp(w.rawData(), w0.rawData(), w.byteSize()), 0);
  EXPECT_EQ(back->report.layers.at(0).origins, std::vector<std::string>{"onnx_id"});
}

TEST(Plan, LoadedEngineRunsAndChecksProfileRanges) {
  auto bytes = writePlan(*sampleDescription());
  auto engine = Runtime().load(bytes);
  auto ctx = engine->createExecutionContext();
  auto x = test::randomFloats({3, 4}, 9);
  auto out = ctx->run({{"x", x}});
  ASSERT_EQ(out.at("y").dims(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(std::memcmp(out.at("y").rawData(), x.rawData(), x.byteSize()), 0);
  try {
    ctx->setInputShape("x", {9, 4});
    FAIL() << "a shape outside the profile must be refused";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dimension 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[1, 8]"), std::string::npos) << msg;
  }
}

TEST(Plan, TruncatedPlansAreRefused) {
  auto bytes = writePlan(*sampleDescription());
  for (size_t keep : {size_t(0), size_t(10), size_t(63), size_t(64), bytes.size() / 2, bytes.size() - 1}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(keep));
    EXPECT_THROW(readPlan(cut), Error) << "kept " << keep << " bytes";
  }
}

TEST(Plan, WrongMagicAndForeignVersionsAreNamed) {
  auto bytes = writePlan(*sampleDescription());
  auto wrongMagic = bytes;
  wrongMagic[0] = 'X';
  expectPlanError(wrongMagic, "KILNPLAN");
  auto newer = bytes;
  uint32_t version = kPlanFormatVersion + 1;
  std::memcpy(newer.data() + 8, &version, 4);
  expectPlanError(newer, "format version");
}

TEST(Plan, EveryFlippedBitIsCaughtWithoutCrashing) {
  auto bytes = writePlan(*sampleDescription());
  std::mt19937 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    auto damaged = bytes;
    size_t at = rng() % damaged.size();
    damaged[at] ^= uint8_t(1u << (rng() % 8));
    EXPECT_THROW(readPlan(damaged), Error) << "flip at byte " << at;
  }
}

TEST(Plan, ChecksumCannotHideMaliciousMetadata) {
  // Rewrite a weights offset to point far outside the blob and fix up the checksum: the reader's
  // bounds checks still refuse it.
  auto d = sampleDescription();
  auto bytes = writePlan(*d);
  PlanHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.weightsBytes = 0;  // claim an empty blob: the constant now points outside it
  std::memcpy(bytes.data(), &h, sizeof h);
  h.checksum = planChecksum(bytes.data() + sizeof h, bytes.size() - sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
  expectPlanError(bytes, "outside the weights blob");
}

// fp4, the newest precision, survives the round trip; a value past it (a corrupt or newer plan's)
// is refused naming the layer.
TEST(Plan, Fp4RoundTripsAndUnknownPrecisionsAreNamed) {
  auto d = sampleDescription();
  d->layers[0].precision = Precision::kFP4;
  EXPECT_EQ(readPlan(writePlan(*d))->layers[0].precision, Precision::kFP4);
  d->layers[0].precision = Precision(int(Precision::kFP4) + 1);
  expectPlanError(writePlan(*d), "layer 'id' has an unknown precision");
}
