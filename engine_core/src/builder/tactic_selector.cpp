#include "tactic_selector.h"

#include <kiln/error.h>

#include "../runtime/layer_runner.h"

#include <algorithm>
#include <chrono>
#include <random>

namespace kiln {
namespace {

std::string attributeText(const Attribute& a) {
  const auto& v = a.value();
  if (auto i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto f = std::get_if<float>(&v)) return std::to_string(*f);
  if (auto s = std::get_if<std::string>(&v)) return *s;
  if (auto is = std::get_if<std::vector<int64_t>>(&v)) return dimsToString(*is);
  return std::string(a.typeName());
}

}  // namespace

std::string TacticSelector::signature(const Network& network, const Layer& layer, Precision precision,
                                      const std::map<std::string, std::vector<int64_t>>& optShapes) const {
  std::string key = std::string(toString(backend_.kind())) + "|" + backend_.device().name + "|" + layer.domain +
                    "::" + layer.opType + "|" + toString(precision);
  for (const auto& in : layer.inputs) {
    auto it = optShapes.find(in);
    const Tensor* t = in.empty() ? nullptr : network.findTensor(in);
    key += "|" + (t ? std::string(toString(t->dtype)) : "-") + ":" + (it != optShapes.end() ? dimsToString(it->second) : "?");
  }
  for (const auto& [name, a] : layer.attributes) key += "|" + name + "=" + attributeText(a);
  return key;
}

double TacticSelector::timeTactic(const Network& network, const Layer& layer, const Tactic& tactic,
                                  const std::map<std::string, std::vector<int64_t>>& optShapes) {
  std::vector<Value> storage(layer.inputs.size());
  std::vector<const Value*> inputs(layer.inputs.size(), nullptr);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < layer.inputs.size(); ++i) {
    if (layer.inputs[i].empty()) continue;
    const Tensor& t = network.tensor(layer.inputs[i]);
    if (t.isConstant()) {
      storage[i] = Value(*t.constant);
    } else {
      auto shape = optShapes.find(t.name);
      if (shape == optShapes.end() || t.dtype != DataType::kFloat32) return -1;  // cannot make a fair input
      HostTensor x(DataType::kFloat32, shape->second);
      for (int64_t k = 0; k < x.elementCount(); ++k) x.data<float>()[k] = dist(rng);
      storage[i] = Value(std::move(x));
    }
    inputs[i] = &storage[i];
  }
  const CpuKernelFn& kernel = cpuKernelFor(layer, tactic.id);
  auto noSubgraphs = [](const Network&, const std::vector<Value>&) -> std::vector<Value> {
    throw Error(ErrorCode::kUnsupported, "layers with subgraphs are not timed");
  };
  runLayerOnCpu(layer, inputs, kernel, noSubgraphs);  // warm-up
  std::vector<double> times;
  for (int run = 0; run < 5; ++run) {
    auto start = std::chrono::steady_clock::now();
    runLayerOnCpu(layer, inputs, kernel, noSubgraphs);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + 2, times.end());
  return times[2];
}

TacticChoice TacticSelector::select(const Network& network, const Layer& layer, Precision precision,
                                    const std::map<std::string, std::vector<int64_t>>& optShapes) {
  auto candidates = backend_.tactics(layer, precision);
  if (candidates.empty()) throw Error(ErrorCode::kInternal, layer.describe() + " has no tactic");
  if (candidates.size() == 1) return {candidates[0].id};
  std::string base = signature(network, layer, precision, optShapes);
  TacticChoice best;
  double bestMs = -1;
  bool allCached = true;
  for (const Tactic& t : candidates) {
    std::string key = base + "|" + t.id;
    double ms;
    if (auto cached = cache_.find(key)) {
      ms = *cached;
    } else {
      allCached = false;
      try {
        ms = timeTactic(network, layer, t, optShapes);
      } catch (const Error&) {
        ms = -1;  // a tactic that cannot run this layer is not a candidate
      }
      if (ms < 0) continue;
      cache_.put(key, ms);
    }
    if (bestMs < 0 || ms < bestMs) {
      bestMs = ms;
      best.tactic = t.id;
    }
  }
  if (bestMs < 0) return {candidates[0].id};
  best.milliseconds = bestMs;
  best.fromCache = allCached;
  best.timed = !allCached;
  return best;
}

}  // namespace kiln
