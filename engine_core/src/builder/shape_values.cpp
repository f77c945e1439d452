#include "shape_values.h"

#include <kiln/error.h>

#include "../ops/collective.h"
#include "../runtime/subgraph_cache.h"

#include <functional>
#include <optional>
#include <unordered_map>

namespace kiln {
namespace {

// Shape vectors and scalars: rank 0 or 1 and short. Larger values are data, not shape arithmetic.
constexpr int64_t kMaxShapeValueElements = 1024;

bool isSmall(const Tensor& t) {
  if (t.kind != ValueKind::kTensor || !t.shape.hasRank() || t.shape.rank() > 1 || t.dtype == DataType::kString)
    return false;
  if (t.shape.rank() == 1 && t.shape[0].isKnown() && t.shape[0].value() > kMaxShapeValueElements) return false;
  return true;
}

// Ops whose output size follows from the data they compute, whatever their inputs' values.
bool sizeFollowsData(const Layer& layer) {
  static const std::set<std::string> ops = {"NonZero", "Unique", "NonMaxSuppression", "StringSplit", "Loop", "Scan"};
  return layer.domain.empty() && ops.count(layer.opType) != 0;
}

// Ops the shape phase may run on the host: deterministic, free of subgraphs and of other ranks.
bool hostEvaluable(const Layer& layer) {
  if (hasSubgraphs(layer) || collective::isCollective(layer)) return false;
  const std::string& op = layer.opType;
  return op.rfind("Random", 0) != 0 && op != "Bernoulli" && op != "Multinomial";
}

struct TypedPoint {
  Network network;                          // typed at this point's input dims
  std::vector<std::vector<bool>> valuesRead;  // per layer, per input
};

TypedPoint typeAt(const Network& network, const std::map<std::string, std::vector<int64_t>>& inputs) {
  TypedPoint point{network, {}};
  for (const auto& [name, dims] : inputs)
    if (Tensor* t = point.network.findTensor(name)) t->shape = Shape::fromDims(dims);
  point.valuesRead.resize(network.layers().size());
  for (size_t i = 0; i < network.layers().size(); ++i) point.network.inferLayer(i, {}, &point.valuesRead[i]);
  return point;
}

}  // namespace

ShapeValuePlan analyzeShapeValues(const Network& network,
                                  const std::vector<std::map<std::string, std::vector<int64_t>>>& inputShapes) {
  const auto& layers = network.layers();
  std::vector<TypedPoint> points;
  for (const auto& shapes : inputShapes) points.push_back(typeAt(network, shapes));
  if (points.empty()) points.push_back(typeAt(network, {}));

  ShapeValuePlan plan;
  plan.inShapePhase.assign(layers.size(), false);
  plan.dataDependent.assign(layers.size(), "");
  plan.valueInputs.resize(layers.size());
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < layers.size(); ++i)
    for (const auto& out : layers[i].outputs)
      if (!out.empty()) producer[out] = i;
  const auto& graphInputs = network.inputs();
  auto isGraphInput = [&](const std::string& name) {
    return std::find(graphInputs.begin(), graphInputs.end(), name) != graphInputs.end();
  };
  auto smallEverywhere = [&](const std::string& name) {
    for (const auto& p : points)
      if (!isSmall(p.network.tensor(name))) return false;
    return true;
  };

  // Whether the shape phase can compute a tensor's value on the host; the layers and graph inputs
  // that takes are collected as it goes.
  std::unordered_map<std::string, bool> computable;
  std::function<bool(const std::string&)> hostComputable = [&](const std::string& name) -> bool {
    if (auto it = computable.find(name); it != computable.end()) return it->second;
    computable[name] = false;  // guards against cycles while this one is worked out
    const Tensor* t = network.findTensor(name);
    bool ok = false;
    if (t && t->isConstant()) {
      ok = true;
    } else if (isGraphInput(name)) {
      ok = smallEverywhere(name);
    } else if (auto p = producer.find(name); p != producer.end()) {
      const Layer& layer = layers[p->second];
      if (layer.domain.empty() && (layer.opType == "Shape" || layer.opType == "Size")) {
        ok = true;  // needs its input's dims only
      } else if (hostEvaluable(layer) && smallEverywhere(name)) {
        ok = true;
        for (const auto& in : layer.inputs)
          if (!in.empty() && !hostComputable(in)) ok = false;
      }
    }
    return computable[name] = ok;
  };
  // Marks the layers (and graph inputs) a computable value comes from.
  std::function<void(const std::string&)> collect = [&](const std::string& name) {
    const Tensor* t = network.findTensor(name);
    if (t && t->isConstant()) return;
    if (isGraphInput(name)) {
      plan.shapeInputs.insert(name);
      return;
    }
    auto p = producer.find(name);
    if (p == producer.end() || plan.inShapePhase[p->second]) return;
    plan.inShapePhase[p->second] = true;
    const Layer& layer = layers[p->second];
    if (layer.domain.empty() && (layer.opType == "Shape" || layer.opType == "Size")) return;
    for (const auto& in : layer.inputs)
      if (!in.empty()) collect(in);
  };

  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& layer = layers[i];
    plan.valueInputs[i].assign(layer.inputs.size(), false);
    for (size_t k = 0; k < layer.inputs.size(); ++k) {
      bool read = false;
      for (const auto& p : points) read = read || (k < p.valuesRead[i].size() && p.valuesRead[i][k]);
      const std::string& name = layer.inputs[k];
      if (!read || name.empty()) continue;
      const Tensor* t = network.findTensor(name);
      if (t && t->isConstant()) continue;
      if (hostComputable(name)) {
        plan.valueInputs[i][k] = true;
        collect(name);
      } else if (plan.dataDependent[i].empty()) {
        plan.dataDependent[i] = "its output shape depends on the values of '" + name + "', which are computed from data";
      }
    }
  }

  // Layers whose outputs stay unknown although their inputs are known and no shape value explains
  // it compute their output size from data.
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& layer = layers[i];
    if (!plan.dataDependent[i].empty() || plan.inShapePhase[i]) continue;
    if (sizeFollowsData(layer)) {
      plan.dataDependent[i] = "its output size depends on the data it computes (" + layer.opType + ")";
      continue;
    }
    const bool readsShapeValues =
        std::find(plan.valueInputs[i].begin(), plan.valueInputs[i].end(), true) != plan.valueInputs[i].end();
    for (const auto& p : points) {
      auto known = [&](const std::string& name) {
        if (name.empty()) return true;
        const Tensor& t = p.network.tensor(name);
        return t.kind != ValueKind::kTensor || t.shape.isFullyKnown();
      };
      const bool inputsKnown = std::all_of(layer.inputs.begin(), layer.inputs.end(), known);
      const bool outputsKnown = std::all_of(layer.outputs.begin(), layer.outputs.end(), known);
      if (inputsKnown && !outputsKnown && !readsShapeValues) {
        plan.dataDependent[i] = "its output size depends on the data it computes (" + layer.opType + ")";
        break;
      }
    }
  }
  return plan;
}

}  // namespace kiln
