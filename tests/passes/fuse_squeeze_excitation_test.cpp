// FuseSqueezeExcitation: GlobalAveragePool -> 1x1 (Fused)Conv -> 1x1 (Fused)Conv becomes one
// kiln.SqueezeExcitation in CUDA builds (after FuseConvEpilogue, as the standard pipeline runs it),
// and the CPU's kernel for it gives the unfused outputs: SiLU / Sigmoid (EfficientNet) and Relu /
// HardSigmoid (MobileNetV3), odd channel counts, rank 4 and rank 3, batch 1 and 3, each bias there
// or not. Nothing is fused where an intermediate has another reader or is a graph output, for a
// 3x3 or grouped or non-constant filter, or for the CPU backend; the schema refuses filters and
// biases of the wrong dims, naming them.
#include "pass_test_util.h"

#include "ops/fused.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

struct Block {
  std::vector<int64_t> x{1, 13, 7, 6};
  int64_t reduced = 5;
  std::string squeezeActivation = "SiLU";    // SiLU, Relu or "" (none)
  std::string exciteActivation = "Sigmoid";  // Sigmoid, HardSigmoid or "" (none)
  bool bias1 = true, bias2 = true;
  int64_t filterSize = 1, group = 1;
  bool constantFilter = true;
  bool pooledSecondReader = false, hiddenIsOutput = false;
};

std::string describe(const Block& b) {
  std::string name = "rank" + std::to_string(b.x.size()) + "_batch" + std::to_string(b.x[0]) + "_" +
                     (b.squeezeActivation.empty() ? "none" : b.squeezeActivation) + "_" +
                     (b.exciteActivation.empty() ? "none" : b.exciteActivation);
  return name + (b.bias1 ? "_b1" : "") + (b.bias2 ? "_b2" : "");
}

// `input` -> activation -> returns the output's name ("" activation: `input` itself).
std::string addActivation(ModelBuilder& mb, const std::string& input, const std::string& activation,
                          const std::string& prefix) {
  if (activation.empty()) return input;
  const std::string out = prefix + "_act";
  if (activation == "SiLU") {
    mb.node("Sigmoid", {input}, {prefix + "_sig"}, prefix + "_sig");
    mb.node("Mul", {input, prefix + "_sig"}, {out}, prefix + "_mul");
  } else {
    auto& node = mb.node(activation, {input}, {out}, prefix + "_act");
    if (activation == "HardSigmoid") {  // MobileNetV3's
      ModelBuilder::setFloat(node, "alpha", 1.0f / 6.0f);
      ModelBuilder::setFloat(node, "beta", 0.5f);
    }
  }
  return out;
}

// The block's 1x1 convolution `name`: `inputs` channels -> `outputs`, returns its stage's output.
std::string addStage(ModelBuilder& mb, const Block& b, const std::string& name, const std::string& input,
                     int64_t inputs, int64_t outputs, bool bias, const std::string& activation, uint32_t seed) {
  std::vector<int64_t> filterDims{outputs, inputs / b.group};
  const size_t spatial = b.x.size() - 2;
  filterDims.insert(filterDims.end(), spatial, b.filterSize);
  if (b.constantFilter)
    mb.initializer(name + "_w", randomFloats(filterDims, seed));
  else
    mb.input(name + "_w", F, filterDims);
  std::vector<std::string> convInputs{input, name + "_w"};
  if (bias) {
    mb.initializer(name + "_b", randomFloats({outputs}, seed + 1));
    convInputs.push_back(name + "_b");
  }
  auto& conv = mb.node("Conv", convInputs, {name}, name);
  if (b.filterSize > 1) ModelBuilder::setInts(conv, "pads", std::vector<int64_t>(2 * spatial, b.filterSize / 2));
  if (b.group != 1) ModelBuilder::setInt(conv, "group", b.group);
  return addActivation(mb, name, activation, name);
}

// x -> GlobalAveragePool -> FC1 -> act1 -> FC2 -> act2 -> "gate"; y = x * gate.
ModelBuilder seBlock(const Block& b) {
  ModelBuilder mb(17);
  mb.input("x", F, b.x);
  mb.node("GlobalAveragePool", {"x"}, {"pooled"}, "pool");
  const int64_t channels = b.x[1];
  const std::string hidden = addStage(mb, b, "fc1", "pooled", channels, b.reduced, b.bias1, b.squeezeActivation, 41);
  const std::string gate = addStage(mb, b, "fc2", hidden, b.reduced, channels, b.bias2, b.exciteActivation, 43);
  mb.node("Mul", {"x", gate}, {"y"}, "scale");
  mb.output("y");
  if (b.pooledSecondReader) {
    mb.node("Identity", {"pooled"}, {"z"}, "second");
    mb.output("z");
  }
  if (b.hiddenIsOutput) mb.output(hidden);
  return mb;
}

Optimized fuse(const Block& b, BackendKind backend = BackendKind::kCuda) {
  PassManager manager;
  manager.add(createFuseConvEpiloguePass());
  manager.add(createFuseSqueezeExcitationPass());
  PassContext context;
  context.backend = backend;
  return optimize(seBlock(b), std::move(manager), std::move(context));
}

int fusedCount(const Block& b, BackendKind backend = BackendKind::kCuda) {
  return countOf(*fuse(b, backend).optimized, "kiln.SqueezeExcitation");
}

}  // namespace

class SqueezeExcitationBlocks : public ::testing::TestWithParam<Block> {};

TEST_P(SqueezeExcitationBlocks, FuseAndMatchTheUnfusedNetwork) {
  const Block b = GetParam();
  auto run = fuse(b);
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.SqueezeExcitation", 1}, {"Mul", 1}}));
  const Layer& se = onlyLayer(*run.optimized, "kiln.SqueezeExcitation");
  std::vector<std::string> inputs{"x", "fc1_w", b.bias1 ? "fc1_b" : "", "fc2_w", b.bias2 ? "fc2_b" : ""};
  if (!b.bias2) inputs.pop_back();  // a trailing absent input is left off
  EXPECT_EQ(se.inputs, inputs);
  EXPECT_EQ(se.attrString("squeeze_activation", ""), b.squeezeActivation);
  EXPECT_EQ(se.attrString("excite_activation", ""), b.exciteActivation);
  if (b.exciteActivation == "HardSigmoid") {
    EXPECT_FLOAT_EQ(se.attrFloat("excite_activation_alpha"), 1.0f / 6.0f);
    EXPECT_FLOAT_EQ(se.attrFloat("excite_activation_beta"), 0.5f);
  }
  std::vector<int64_t> gateDims(b.x.size(), 1);
  gateDims[0] = b.x[0];
  gateDims[1] = b.x[1];
  EXPECT_EQ(run.optimized->tensor(se.outputs.at(0)).shape, Shape::fromDims(gateDims));
  std::vector<std::string> origins{"pool", "fc1", "fc2"};
  if (b.squeezeActivation == "SiLU")
    origins.insert(origins.end(), {"fc1_sig", "fc1_mul"});
  else if (!b.squeezeActivation.empty())
    origins.push_back("fc1_act");
  if (!b.exciteActivation.empty()) origins.push_back("fc2_act");
  EXPECT_TRUE(hasOrigins(se, origins)) << ::testing::PrintToString(se.origins);
  ASSERT_EQ(run.records.at(1).changes.size(), 1u);
  EXPECT_NE(run.records[1].changes[0].find("into kiln.SqueezeExcitation"), std::string::npos)
      << run.records[1].changes[0];
  for (uint32_t seed : {1u, 7u}) expectSameOutputs(run, seed, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Blocks, SqueezeExcitationBlocks,
                         ::testing::Values(Block{}, Block{{3, 13, 5, 9}, 5, "Relu", "HardSigmoid"},
                                           Block{{1, 13, 11}, 5, "SiLU", "Sigmoid", false, false},
                                           Block{{3, 13, 8}, 5, "Relu", "HardSigmoid", true, false},
                                           Block{{3, 16, 4, 4}, 4, "", "", false, true},
                                           Block{{1, 13, 3, 5}, 5, "", "", true, true},
                                           Block{{1, 7, 1, 1}, 3, "", "Sigmoid", false, false}),
                         [](const ::testing::TestParamInfo<Block>& info) { return describe(info.param); });

TEST(FuseSqueezeExcitation, InTheStandardPipelineForCuda) {
  PassContext context;
  context.backend = BackendKind::kCuda;
  auto run = optimize(seBlock({}), PassManager::standard(3), std::move(context));
  EXPECT_EQ(countOf(*run.optimized, "kiln.SqueezeExcitation"), 1);
  expectSameOutputs(run, 3, 1e-5);
  EXPECT_EQ(countOf(*optimize(seBlock({}), PassManager::standard(3)).optimized, "kiln.SqueezeExcitation"), 0);
}

TEST(FuseSqueezeExcitation, LeavesOtherBlocksAlone) {
  EXPECT_EQ(fusedCount({}, BackendKind::kCpu), 0);
  Block secondReader;
  secondReader.pooledSecondReader = true;
  EXPECT_EQ(fusedCount(secondReader), 0);
  Block hiddenOutput;
  hiddenOutput.hiddenIsOutput = true;
  EXPECT_EQ(fusedCount(hiddenOutput), 0);
  Block window;
  window.filterSize = 3;
  EXPECT_EQ(fusedCount(window), 0);
  Block grouped;
  grouped.x = {1, 10, 4, 4};
  grouped.group = 5;
  EXPECT_EQ(fusedCount(grouped), 0);
  Block inputFilter;
  inputFilter.constantFilter = false;
  EXPECT_EQ(fusedCount(inputFilter), 0);
  // Each guard alone: the same block without it fuses.
  EXPECT_EQ(fusedCount({}), 1);
}

TEST(FuseSqueezeExcitation, BackendMayRefuse) {
  PassManager manager;
  manager.add(createFuseConvEpiloguePass());
  manager.add(createFuseSqueezeExcitationPass());
  PassContext context;
  context.backend = BackendKind::kCuda;
  context.backendSupports = [](const Layer& l) { return l.opType != fused::kSqueezeExcitation; };
  EXPECT_EQ(countOf(*optimize(seBlock({}), std::move(manager), std::move(context)).optimized, "kiln.SqueezeExcitation"),
            0);
}

namespace {

// The fused block with input `input` of its layer reading a new constant of `dims`; the error
// inferring it, or "" when there is none.
std::string inferenceErrorWith(size_t input, std::vector<int64_t> dims) {
  auto net = fuse({}).optimized;
  auto layer = std::find_if(net->layers().begin(), net->layers().end(),
                            [](const Layer& l) { return l.opType == fused::kSqueezeExcitation; });
  if (layer == net->layers().end()) return "the block was not fused";
  Layer& se = *layer;
  net->addConstant("bad", randomFloats(std::move(dims), 5));
  se.inputs.at(input) = "bad";
  try {
    net->inferShapes();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expectRefused(const std::string& error, const std::vector<std::string>& mentions) {
  EXPECT_NE(error.find("'pool'"), std::string::npos) << error;  // the layer
  for (const std::string& m : mentions) EXPECT_NE(error.find(m), std::string::npos) << error;
}

}  // namespace

TEST(SqueezeExcitationSchema, RefusesWrongDimsWithAMessage) {
  namespace se = fused::squeeze_excitation;
  ASSERT_EQ(inferenceErrorWith(se::kW1, {5, 13, 1, 1}), "");  // the right dims pass
  expectRefused(inferenceErrorWith(se::kW1, {5, 12, 1, 1}), {"W1", "[5,12,1,1]", "must be 13"});
  expectRefused(inferenceErrorWith(se::kW2, {13, 4, 1, 1}), {"W2", "must be 5"});
  expectRefused(inferenceErrorWith(se::kW1, {5, 13, 3, 3}), {"W1", "spatial dims must all be 1"});
  expectRefused(inferenceErrorWith(se::kW2, {13, 5, 1}), {"one rank"});
  expectRefused(inferenceErrorWith(se::kB1, {4}), {"B1", "must be 5"});
  expectRefused(inferenceErrorWith(se::kB2, {13, 1}), {"B2", "1-D"});
}

TEST(SqueezeExcitationKernel, UnknownActivationNamesTheLayer) {
  auto net = fuse({}).optimized;
  ASSERT_EQ(countOf(*net, "kiln.SqueezeExcitation"), 1);
  for (Layer& l : net->layers())
    if (l.opType == fused::kSqueezeExcitation) l.attributes["excite_activation"] = std::string("Swish2");
  try {
    ReferenceExecutor(net).run(randomInputs(*net, 3));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("excite_activation 'Swish2'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'pool'"), std::string::npos) << e.what();
  }
}
