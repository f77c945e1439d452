#pragma once
// Small models with one layer made sensitive to reduced precision on purpose, for the precision
// tools (kiln/precision_bisect.h, kiln/quantization_advisor.h) and `kiln debug`, and how their tests
// judge a build independently of the tools.
#include "common/test_models.h"

#include <kiln/builder.h>
#include <kiln/layer_precision_file.h>
#include <kiln/npy.h>
#include <kiln/precision_debug.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kiln::test {

// `count` sets {"x": random floats of `dims`}, seeded from `seed` on.
inline std::vector<InputSet> randomInputSets(const std::vector<int64_t>& dims, int count, uint32_t seed) {
  std::vector<InputSet> sets;
  for (int i = 0; i < count; ++i) sets.push_back({{"x", randomFloats(dims, seed + uint32_t(i))}});
  return sets;
}

// An engine built with `config` and `constraints`, scored against the reference executor on
// `inputs`: as `kiln build --layer-precision-file` and then `kiln compare` would judge it.
inline AccuracyScore scoreBuild(const Network& network, BuilderConfig config, const LayerPrecisions& constraints,
                                const std::vector<InputSet>& inputs, const AccuracyCriterion& criterion) {
  config.layerPrecisions = constraints;
  auto context = Runtime().load(Builder().build(network, config).plan)->createExecutionContext();
  ReferenceExecutor reference(std::make_shared<Network>(network));
  std::vector<InputSet> expected, actual;
  for (const auto& set : inputs) {
    InputSet out;
    for (auto& [name, value] : reference.run(ValueMap(set.begin(), set.end()))) out[name] = value.tensor;
    expected.push_back(std::move(out));
    actual.push_back(context->run(set));
  }
  return scoreOutputs(criterion, expected, actual);
}

// x [4, 16] -> mm1 + tanh1 -> mm2 + tanh2 -> amplify -> shrink -> y [4, 8]. `amplify`'s weights are
// ~4e4, so its outputs (~5e4, many beyond fp16's 65504) overflow fp16 storage; `shrink` (weights
// ~1e-3) brings them back to ~1e2. In fp16 only `amplify` must stay fp32: `shrink` reads its
// fp32 output and computes in fp32 on the CPU.
inline ModelBuilder fp16OverflowModel() {
  using namespace onnx_types;
  HostTensor amplify = randomFloats({16, 16}, 13, -1.0f, 1.0f);
  for (int64_t i = 0; i < amplify.elementCount(); ++i) amplify.data<float>()[i] *= 4e4f;
  ModelBuilder mb;
  mb.input("x", kFloat, {4, 16})
      .initializer("w1", randomFloats({16, 16}, 11, -0.5f, 0.5f))
      .initializer("w2", randomFloats({16, 16}, 12, -0.5f, 0.5f))
      .initializer("w3", amplify)
      .initializer("w4", randomFloats({16, 8}, 14, -1e-3f, 1e-3f))
      .output("y");
  mb.node("MatMul", {"x", "w1"}, {"h1"}, "mm1");
  mb.node("Tanh", {"h1"}, {"t1"}, "tanh1");
  mb.node("MatMul", {"t1", "w2"}, {"h2"}, "mm2");
  mb.node("Tanh", {"h2"}, {"t2"}, "tanh2");
  mb.node("MatMul", {"t2", "w3"}, {"big"}, "amplify");
  mb.node("MatMul", {"big", "w4"}, {"y"}, "shrink");
  return mb;
}

// x [8, 16] -> mm1 + relu1 -> mixer -> head -> y [8, 4]. mm1's output channel 0 is ~500 times the
// others, and `mixer` reads it back at 1e-2 weight, so in FP32 every channel counts. Quantized,
// `mixer`'s input gets one per-tensor scale set by channel 0, and the other channels round to 0:
// only `mixer` must stay float. (mm1's weights are quantized per output channel, so channel 0
// costs it nothing.)
inline ModelBuilder int8OutlierModel() {
  using namespace onnx_types;
  HostTensor w1 = randomFloats({16, 32}, 21, -0.5f, 0.5f);
  for (int64_t k = 0; k < 16; ++k) w1.data<float>()[k * 32] *= 500.0f;
  HostTensor w2 = randomFloats({32, 16}, 22, -0.5f, 0.5f);
  for (int64_t n = 0; n < 16; ++n) w2.data<float>()[n] *= 1e-2f;
  ModelBuilder mb;
  mb.input("x", kFloat, {8, 16})
      .initializer("w1", w1)
      .initializer("w2", w2)
      .initializer("w3", randomFloats({16, 4}, 23, -0.5f, 0.5f))
      .output("y");
  mb.node("MatMul", {"x", "w1"}, {"h1"}, "mm1");
  mb.node("Relu", {"h1"}, {"r1"}, "relu1");
  mb.node("MatMul", {"r1", "w2"}, {"h2"}, "mixer");
  mb.node("MatMul", {"h2", "w3"}, {"y"}, "head");
  return mb;
}

// How the tests debug fp16OverflowModel: fp16, `sets` random input sets, cosine >= 0.9999.
inline PrecisionDebugOptions fp16OverflowOptions(int sets = 2) {
  PrecisionDebugOptions o;
  o.config.allowFP16 = true;
  o.inputs = randomInputSets({4, 16}, sets, 100);
  o.criterion.metric = AccuracyCriterion::Metric::kCosine;
  o.criterion.minCosine = 0.9999;
  return o;
}

// int8OutlierModel's input batches: x.0.npy ... of [8, 16] in `folder` (made), seeds from `seed` on.
inline std::string writeOutlierBatches(const std::string& folder, int count = 4, uint32_t seed = 200) {
  std::filesystem::create_directories(folder);
  for (int k = 0; k < count; ++k)
    writeNpyFile(randomFloats({8, 16}, seed + uint32_t(k)), folder + "/x." + std::to_string(k) + ".npy");
  return folder;
}

// How the tests debug int8OutlierModel: int8 with the minmax calibrator on `calibration` (made by
// writeOutlierBatches), two input sets held out of it, cosine >= 0.999.
inline PrecisionDebugOptions int8OutlierOptions(const std::string& calibration) {
  PrecisionDebugOptions o;
  o.config.allowINT8 = true;
  o.config.calibration.dataPath = calibration;
  o.config.calibration.calibrator = CalibratorKind::kMinMax;
  o.inputs = randomInputSets({8, 16}, 2, 300);
  o.criterion.metric = AccuracyCriterion::Metric::kCosine;
  o.criterion.minCosine = 0.999;
  return o;
}

// x [4, 16] -> mm -> y0; y = y0 + RandomUniformLike(y0) with no seed: every run draws new values,
// so no engine matches the reference, not even with every layer in FP32.
inline ModelBuilder unseededRandomModel() {
  using namespace onnx_types;
  ModelBuilder mb;
  mb.input("x", kFloat, {4, 16}).initializer("w", randomFloats({16, 8}, 31)).output("y");
  mb.node("MatMul", {"x", "w"}, {"y0"}, "mm");
  mb.node("RandomUniformLike", {"y0"}, {"noise"}, "noise");
  mb.node("Add", {"y0", "noise"}, {"y"}, "add");
  return mb;
}

}  // namespace kiln::test
