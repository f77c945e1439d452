#pragma once
// Helpers for pass tests in the style of ONNX Runtime's graph_transform_test: build a model, run
// one pass (or a standard pipeline), count op types before and after, compare outputs.
#include <kiln/compare.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include "common/test_models.h"
#include "passes/pass.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

namespace kiln::test {

inline std::shared_ptr<Network> importModel(const ModelBuilder& mb) { return OnnxImporter().importBytes(mb.bytes()); }

// Op type counts; Kiln's fused ops are keyed "kiln.FusedConv".
inline std::map<std::string, int> opCounts(const Network& network) {
  std::map<std::string, int> counts;
  for (const Layer& l : network.layers()) ++counts[l.domain.empty() ? l.opType : l.domain + "." + l.opType];
  return counts;
}

inline int countOf(const Network& network, const std::string& key) {
  auto counts = opCounts(network);
  return counts.count(key) ? counts.at(key) : 0;
}

struct Optimized {
  std::shared_ptr<Network> original, optimized;
  std::vector<PassRecord> records;
};

inline Optimized optimize(const ModelBuilder& mb, PassManager manager, PassContext context = {}) {
  Optimized result;
  result.original = importModel(mb);
  result.optimized = std::make_shared<Network>(*result.original);
  result.records = manager.run(*result.optimized, context);
  return result;
}

inline Optimized optimize(const ModelBuilder& mb, std::unique_ptr<Pass> pass, PassContext context = {}) {
  PassManager manager;
  manager.add(std::move(pass));
  return optimize(mb, std::move(manager), std::move(context));
}

// The single layer of `key` (as in opCounts); fails the test when there is not exactly one.
inline const Layer& onlyLayer(const Network& network, const std::string& key) {
  const Layer* found = nullptr;
  int count = 0;
  for (const Layer& l : network.layers())
    if ((l.domain.empty() ? l.opType : l.domain + "." + l.opType) == key) {
      found = &l;
      ++count;
    }
  if (count != 1) throw std::runtime_error("expected one " + key + " layer, found " + std::to_string(count));
  return *found;
}

inline ValueMap randomInputs(const Network& network, uint32_t seed) {
  ValueMap inputs;
  for (const auto& name : network.runtimeInputs()) {
    const Tensor& t = network.tensor(name);
    inputs[name] = randomFloats(t.shape.knownDims(), seed++);
  }
  return inputs;
}

// Runs both networks on the same random inputs; every output must agree within `rtol`.
inline void expectSameOutputs(const Optimized& run, uint32_t seed = 1, double rtol = 1e-4) {
  ValueMap inputs = randomInputs(*run.original, seed);
  ValueMap expected = ReferenceExecutor(run.original).run(inputs);
  ValueMap actual = ReferenceExecutor(run.optimized).run(inputs);
  ASSERT_EQ(expected.size(), actual.size());
  for (const auto& [name, value] : expected) {
    ASSERT_TRUE(actual.count(name)) << "output " << name << " missing after the passes";
    EXPECT_EQ(checkClose(actual.at(name), value, rtol, 1e-5), "") << "output " << name;
  }
}

inline bool hasOrigins(const Layer& layer, std::vector<std::string> names) {
  auto origins = layer.origins;
  std::sort(origins.begin(), origins.end());
  std::sort(names.begin(), names.end());
  return origins == names;
}

inline void setFloatsConstant(ModelBuilder& mb, const std::string& name, std::vector<int64_t> dims,
                              std::vector<float> values) {
  mb.initializer(name, HostTensor::fromVector<float>(std::move(dims), values));
}

inline void setScalar(ModelBuilder& mb, const std::string& name, float value) {
  mb.initializer(name, HostTensor::scalar<float>(value));
}

inline void setInts(ModelBuilder& mb, const std::string& name, std::vector<int64_t> values) {
  mb.initializer(name, HostTensor::fromVector<int64_t>({int64_t(values.size())}, values));
}

}  // namespace kiln::test
