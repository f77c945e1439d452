// CPU and CUDA engines agree on the normalisations: BatchNormalization (inference),
// LayerNormalization (several axes, with and without bias, Mean and InvStdDev out, parameters that
// broadcast), InstanceNormalization, GroupNormalization (per-group and per-channel parameters),
// LpNormalization, MeanVarianceNormalization and LRN, at odd sizes and batch 1, in fp32, fp16 and
// bf16, with parameters as weights and as activations (the node tests feed them as inputs).
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

constexpr Precision kPrecisions[] = {Precision::kFP32, Precision::kFP16, Precision::kBF16};

// Parameters: weights (initializers) or graph inputs fed with `values`.
struct Parameters {
  bool asInputs;
  std::map<std::string, HostTensor> values;
  void add(ModelBuilder& mb, const std::string& name, const HostTensor& value) {
    if (asInputs) {
      mb.input(name, kFloat, value.dims());
      values[name] = value;
    } else {
      mb.initializer(name, value);
    }
  }
};

test::Agreement agree(ModelBuilder& mb, std::map<std::string, HostTensor> inputs, const Parameters& parameters,
                Precision precision) {
  inputs.insert(parameters.values.begin(), parameters.values.end());
  return test::expectBackendsAgree(mb.bytes(), inputs, precision);
}

TEST(NormAgreement, BatchNormalization) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1, 3, 5, 7}, {2, 4, 9}, {3, 6}, {1, 5, 2, 3, 3}})
    for (bool asInputs : {false, true})
      for (Precision precision : kPrecisions) {
        SCOPED_TRACE(dimsToString(dims) + (asInputs ? " inputs " : " weights ") + toString(precision));
        ModelBuilder mb(15);
        mb.input("x", kFloat, dims).output("y");
        Parameters p{asInputs, {}};
        const std::vector<int64_t> c = {dims[1]};
        p.add(mb, "scale", test::randomFloats(c, 41, 0.5f, 1.5f));
        p.add(mb, "bias", test::randomFloats(c, 42));
        p.add(mb, "mean", test::randomFloats(c, 43));
        p.add(mb, "var", test::randomFloats(c, 44, 0.2f, 2.0f));
        ModelBuilder::setFloat(mb.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn"),
                               "epsilon", 1e-3f);
        agree(mb, {{"x", test::randomFloats(dims, 45)}}, p, precision);
      }
}

TEST(NormAgreement, LayerNormalizationAxesBiasAndStatistics) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Case {
    std::vector<int64_t> dims;
    int64_t axis;
    bool bias, statistics;
    std::vector<int64_t> scaleDims;  // empty: the normalised dims
  };
  const std::vector<Case> cases = {{{1, 7}, -1, true, false, {}},         {{3, 5, 9}, -1, false, true, {}},
                                   {{3, 5, 9}, 1, true, true, {}},        {{2, 3, 33}, 0, true, false, {}},
                                   {{2, 3, 4, 5}, -2, true, true, {1, 5}}, {{1, 1, 1001}, -1, true, false, {}}};
  for (const Case& c : cases)
    for (bool asInputs : {false, true})
      for (Precision precision : kPrecisions) {
        SCOPED_TRACE(dimsToString(c.dims) + " axis " + std::to_string(c.axis) + (asInputs ? " inputs " : " weights ") +
                     toString(precision));
        const size_t axis = size_t(c.axis < 0 ? c.axis + int64_t(c.dims.size()) : c.axis);
        const std::vector<int64_t> normalized(c.dims.begin() + int64_t(axis), c.dims.end());
        const std::vector<int64_t> scaleDims = c.scaleDims.empty() ? normalized : c.scaleDims;
        ModelBuilder mb(17);
        mb.input("x", kFloat, c.dims).output("y");
        Parameters p{asInputs, {}};
        p.add(mb, "scale", test::randomFloats(scaleDims, 51, 0.5f, 1.5f));
        std::vector<std::string> inputs = {"x", "scale"}, outputs = {"y"};
        if (c.bias) {
          p.add(mb, "bias", test::randomFloats(scaleDims, 52));
          inputs.push_back("bias");
        }
        if (c.statistics) {
          mb.output("mean").output("inv_std_dev");
          outputs.insert(outputs.end(), {"mean", "inv_std_dev"});
        }
        auto& node = mb.node("LayerNormalization", inputs, outputs, "ln");
        ModelBuilder::setInt(node, "axis", c.axis);
        ModelBuilder::setFloat(node, "epsilon", 1e-4f);
        agree(mb, {{"x", test::randomFloats(c.dims, 53, -2.0f, 3.0f)}}, p, precision);
      }
}

TEST(NormAgreement, InstanceAndGroupNormalization) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1, 6, 5, 3}, {2, 4, 7}, {1, 2, 1, 9}})
    for (bool asInputs : {false, true})
      for (Precision precision : kPrecisions) {
        SCOPED_TRACE(dimsToString(dims) + (asInputs ? " inputs " : " weights ") + toString(precision));
        const int64_t channels = dims[1], groups = 2;
        ModelBuilder instance(6);
        instance.input("x", kFloat, dims).output("y");
        Parameters p{asInputs, {}};
        p.add(instance, "scale", test::randomFloats({channels}, 61, 0.5f, 1.5f));
        p.add(instance, "bias", test::randomFloats({channels}, 62));
        instance.node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "instance");
        const HostTensor x = test::randomFloats(dims, 63, -1.0f, 2.0f);
        agree(instance, {{"x", x}}, p, precision);
        // Opset 18: one scale and bias per group; opset 21: per channel.
        for (int64_t opset : {18, 21}) {
          SCOPED_TRACE("GroupNormalization opset " + std::to_string(opset));
          ModelBuilder group(opset);
          group.input("x", kFloat, dims).output("y");
          Parameters q{asInputs, {}};
          const int64_t count = opset == 18 ? groups : channels;
          q.add(group, "scale", test::randomFloats({count}, 64, 0.5f, 1.5f));
          q.add(group, "bias", test::randomFloats({count}, 65));
          auto& node = group.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "group");
          ModelBuilder::setInt(node, "num_groups", groups);
          agree(group, {{"x", x}}, q, precision);
        }
      }
}

TEST(NormAgreement, LpMeanVarianceAndLrn) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{2, 5, 3, 7}, {1, 3, 1, 1}, {1, 7, 9, 2}})
    for (Precision precision : kPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb(13);
      mb.input("x", kFloat, dims).output("l1").output("l2").output("mvn").output("mvn_c").output("lrn3").output("lrn4");
      auto& l1 = mb.node("LpNormalization", {"x"}, {"l1"}, "l1");
      ModelBuilder::setInt(l1, "p", 1);
      ModelBuilder::setInt(l1, "axis", 1);
      mb.node("LpNormalization", {"x"}, {"l2"}, "l2");
      mb.node("MeanVarianceNormalization", {"x"}, {"mvn"}, "mvn");
      ModelBuilder::setInts(mb.node("MeanVarianceNormalization", {"x"}, {"mvn_c"}, "mvn_c"), "axes", {1, 3});
      ModelBuilder::setInt(mb.node("LRN", {"x"}, {"lrn3"}, "lrn3"), "size", 3);
      auto& lrn = mb.node("LRN", {"x"}, {"lrn4"}, "lrn4");
      ModelBuilder::setInt(lrn, "size", 4);
      ModelBuilder::setFloat(lrn, "alpha", 1e-2f);
      ModelBuilder::setFloat(lrn, "bias", 2.0f);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 71, -2.0f, 2.0f)}}, precision);
    }
}

}  // namespace
