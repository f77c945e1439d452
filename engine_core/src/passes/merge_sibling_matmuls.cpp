// Sibling MatMuls that read one activation with constant weights (a transformer's Q, K and V
// projections) -> one kiln.FusedMatMul over the weights side by side, then a Split of its last
// axis into the original outputs. One wide product keeps the GPU busier than three narrow ones
// and saves launches; the Split costs one copy. Members: MatMul, or kiln.FusedMatMul over MatMul
// with at most a per-column bias (no activation, no residual), float32, weights [K, N_i].
#include "../ops/fused.h"
#include "graph_utils.h"
#include "passes.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace kiln {
namespace {

using namespace passes;

struct Member {
  size_t layer;
  const HostTensor* weights;  // [K, N]
  const HostTensor* bias;     // [N] (any rank, N elements along the last dim), or null
};

// The member form of `layer` reading `activation` as its A, if it is one.
std::optional<Member> memberOf(const Network& network, const GraphIndex& index, size_t at,
                               const std::string& activation) {
  const Layer& layer = index.layer(at);
  const bool plain = isOp(layer, "MatMul");
  const bool fusedPlain = layer.domain == fused::kDomain && layer.opType == fused::kFusedMatMul &&
                          layer.attrString(fused::kBase, "") == "MatMul" &&
                          layer.attrString(fused::kActivation, "").empty() && !layer.hasInput(3);
  if (!(plain || fusedPlain) || layer.inputs.size() < 2 || layer.inputs[0] != activation || layer.outputs.size() != 1 ||
      !layer.hasOutput(0))
    return std::nullopt;
  const HostTensor* w = constantValue(network, layer.inputs[1]);
  if (!w || w->dtype() != DataType::kFloat32 || w->rank() != 2) return std::nullopt;
  const HostTensor* b = fusedPlain && layer.hasInput(2) ? constantValue(network, layer.inputs[2]) : nullptr;
  if (fusedPlain && layer.hasInput(2) &&
      (!b || b->dtype() != DataType::kFloat32 || b->elementCount() != w->dim(1) || b->rank() == 0 ||
       b->dims().back() != w->dim(1)))
    return std::nullopt;
  const Tensor* out = network.findTensor(layer.outputs[0]);
  if (!out || out->dtype != DataType::kFloat32) return std::nullopt;
  return Member{at, w, b};
}

struct Merge {
  std::vector<size_t> layers;  // the members, replaced by `product`
  Layer product, split;
  std::vector<std::pair<std::string, HostTensor>> constants;
};

class MergeSiblingMatMulsPass final : public Pass {
 public:
  std::string name() const override { return "MergeSiblingMatMuls"; }

 private:
  void apply(Network& network, PassContext& context) override {
    GraphIndex index(network);
    std::vector<Merge> merges;  // built first: adding constants while reading the network's would move them
    std::set<size_t> claimed;
    for (const std::string& name : network.tensorNames()) {
      const Tensor* tensor = network.findTensor(name);
      if (!tensor || !tensor->shape.hasRank() || tensor->shape.rank() < 2 || tensor->dtype != DataType::kFloat32)
        continue;
      std::vector<Member> members;
      for (size_t reader : index.consumers(name))
        if (auto m = memberOf(network, index, reader, name); m && !claimed.count(reader)) members.push_back(*m);
      if (members.size() < 2) continue;
      // One weight height for all (A's last dim fixes it, but a broadcasting MatMul may differ).
      const int64_t k = members[0].weights->dim(0);
      members.erase(std::remove_if(members.begin(), members.end(), [&](const Member& m) { return m.weights->dim(0) != k; }),
                    members.end());
      if (members.size() < 2) continue;
      std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) { return a.layer < b.layer; });
      if (auto merge = mergeOf(network, index, name, members, context)) {
        for (size_t layer : merge->layers) claimed.insert(layer);
        merges.push_back(std::move(*merge));
      }
    }
    if (merges.empty()) return;
    Rewriter rewriter(network);
    for (Merge& merge : merges) {
      context.note("merged " + describeLayers(network, merge.layers) + " into one product and a Split");
      for (auto& [constant, value] : merge.constants) network.addConstant(constant, std::move(value));
      rewriter.replace(merge.layers, std::move(merge.product));
    }
    rewriter.commit();
    for (Merge& merge : merges) network.addLayer(std::move(merge.split));
    network.sortLayersTopologically();
  }

  // The merged product, the Split after it and their new constants; nullopt when the backend takes
  // either not.
  static std::optional<Merge> mergeOf(const Network& network, const GraphIndex& index, const std::string& activation,
                                      const std::vector<Member>& members, PassContext& context) {
    const int64_t k = members[0].weights->dim(0);
    std::vector<int64_t> widths;
    bool anyBias = false;
    for (const Member& m : members) {
      widths.push_back(m.weights->dim(1));
      anyBias |= m.bias != nullptr;
    }
    int64_t total = 0;
    for (int64_t w : widths) total += w;
    HostTensor weights(DataType::kFloat32, {k, total});
    std::vector<float> bias(size_t(total), 0.0f);
    int64_t column = 0;
    for (const Member& m : members) {
      const int64_t n = m.weights->dim(1);
      for (int64_t row = 0; row < k; ++row)
        std::memcpy(weights.data<float>() + row * total + column, m.weights->data<float>() + row * n,
                    size_t(n) * sizeof(float));
      if (m.bias) std::memcpy(bias.data() + column, m.bias->data<float>(), size_t(n) * sizeof(float));
      column += n;
    }
    const Layer& first = index.layer(members[0].layer);
    Layer product;
    product.name = first.name + "/merged";
    product.domain = fused::kDomain;
    product.opType = fused::kFusedMatMul;
    product.opsetVersion = first.opsetVersion;
    product.attributes[fused::kBase] = std::string("MatMul");
    const std::string merged = uniqueTensorName(network, first.outputs[0] + "/merged");
    product.inputs = {activation, uniqueTensorName(network, first.name + "/merged_weights")};
    if (anyBias) product.inputs.push_back(uniqueTensorName(network, first.name + "/merged_bias"));
    product.outputs = {merged};

    Layer split;
    split.name = first.name + "/split";
    split.opType = "Split";
    split.opsetVersion = 13;
    split.attributes["axis"] = int64_t(-1);
    split.inputs = {merged, uniqueTensorName(network, first.name + "/split_sizes")};
    for (const Member& m : members) split.outputs.push_back(index.layer(m.layer).outputs[0]);
    std::vector<size_t> layers;
    for (const Member& m : members) layers.push_back(m.layer);
    split.origins = mergedOrigins(network, layers);
    if (!context.supports(product) || !context.supports(split)) return std::nullopt;
    Merge merge{layers, std::move(product), std::move(split), {}};
    merge.constants.emplace_back(merge.product.inputs[1], std::move(weights));
    if (anyBias) merge.constants.emplace_back(merge.product.inputs[2], HostTensor::fromVector<float>({total}, bias));
    merge.constants.emplace_back(merge.split.inputs[1], HostTensor::fromVector<int64_t>({int64_t(widths.size())}, widths));
    return merge;
  }
};

}  // namespace

std::unique_ptr<Pass> createMergeSiblingMatMulsPass() { return std::make_unique<MergeSiblingMatMulsPass>(); }

}  // namespace kiln
