// nn.MultiheadAttention's export lays the attention's output out sequence-first
// for its output projection, then back batch-first:
//   O [B, H, L, D] -> Transpose(2, 0, 1, 3) -> Reshape [L*B, H*D] ->
//   Gemm/MatMul -> Reshape [L, B, N]
//   -> Transpose(1, 0, 2) -> y [B, L, N]
// The projection treats rows alone, so it may as well run on batch-first rows:
//   kiln.Attention (out_interleaved, [B, L, H, D]) -> Reshape [B, L, H*D] ->
//   Reshape [B*L, H*D]
//   -> the same Gemm/MatMul -> Reshape [B, L, N] = y
// Both Transposes go; UnflattenGemm then makes the projection a MatMul on [B,
// L, H*D], whose bias and residual FuseMatMulEpilogue takes in.
#include "../ops/fused.h"
#include "graph_utils.h"
#include "passes.h"

#include <set>

namespace kiln {
namespace {

using namespace passes;

struct Match {
  size_t attention, toSequenceFirst, flatten, projection, unflatten, toBatchFirst;
  int64_t batch, heads, length, depth, width;  // B, H, L, D, N
};

// The single reader of `tensor` when it is an ai.onnx `opType` with an output.
std::optional<size_t> soleReaderOfType(const GraphIndex& index, const std::string& tensor, const char* opType) {
  const auto reader = index.soleConsumer(tensor);
  if (!reader || !isOp(index.layer(*reader), opType) || !index.layer(*reader).hasOutput(0)) return std::nullopt;
  return reader;
}

std::optional<Match> matchAt(const Network& network, const GraphIndex& index, size_t at) {
  const Layer& attention = index.layer(at);
  if (attention.domain != fused::kDomain || attention.opType != fused::kAttention || !attention.hasOutput(0) ||
      fused::attentionInterleaved(attention, fused::kAttentionOutput))
    return std::nullopt;
  const auto out = knownDims(network, attention.outputs[0]);
  if (!out || out->size() != 4) return std::nullopt;
  Match m{at, 0, 0, 0, 0, 0, (*out)[0], (*out)[1], (*out)[2], (*out)[3], 0};
  const auto toSequenceFirst = soleReaderOfType(index, attention.outputs[0], "Transpose");
  if (!toSequenceFirst || index.layer(*toSequenceFirst).attrInts("perm") != std::vector<int64_t>{2, 0, 1, 3})
    return std::nullopt;
  const auto flatten = soleReaderOfType(index, index.layer(*toSequenceFirst).outputs[0], "Reshape");
  if (!flatten || knownDims(network, index.layer(*flatten).outputs[0]) !=
                      std::vector<int64_t>{m.length * m.batch, m.heads * m.depth})
    return std::nullopt;
  const auto projection = index.soleConsumer(index.layer(*flatten).outputs[0]);
  if (!projection) return std::nullopt;
  const Layer& product = index.layer(*projection);
  const bool gemm = isOp(product, "Gemm") && product.attrInt("transA", 0) == 0;
  if (!(gemm || isOp(product, "MatMul")) || product.inputs[0] != index.layer(*flatten).outputs[0] ||
      !product.hasOutput(0) || product.outputs.size() != 1)
    return std::nullopt;
  const auto projected = knownDims(network, product.outputs[0]);
  if (!projected || projected->size() != 2 || (*projected)[0] != m.length * m.batch) return std::nullopt;
  m.width = (*projected)[1];
  const auto unflatten = soleReaderOfType(index, product.outputs[0], "Reshape");
  if (!unflatten ||
      knownDims(network, index.layer(*unflatten).outputs[0]) != std::vector<int64_t>{m.length, m.batch, m.width})
    return std::nullopt;
  const auto toBatchFirst = soleReaderOfType(index, index.layer(*unflatten).outputs[0], "Transpose");
  if (!toBatchFirst || index.layer(*toBatchFirst).attrInts("perm") != std::vector<int64_t>{1, 0, 2})
    return std::nullopt;
  m.toSequenceFirst = *toSequenceFirst;
  m.flatten = *flatten;
  m.projection = *projection;
  m.unflatten = *unflatten;
  m.toBatchFirst = *toBatchFirst;
  return m;
}

Layer reshapeLayer(const std::string& name, const std::string& in, const std::string& shape, const std::string& out,
                   std::vector<std::string> origins) {
  Layer reshape;
  reshape.origins = std::move(origins);
  reshape.name = name;
  reshape.opType = "Reshape";
  reshape.opsetVersion = 14;
  reshape.inputs = {in, shape};
  reshape.outputs = {out};
  return reshape;
}

class FoldAttentionOutputLayoutPass final : public Pass {
 public:
  std::string name() const override { return "FoldAttentionOutputLayout"; }

 private:
  void apply(Network& network, PassContext& context) override {
    GraphIndex index(network);
    std::vector<Match> matches;
    for (size_t i = 0; i < network.layers().size(); ++i)
      if (auto m = matchAt(network, index, i)) matches.push_back(*m);
    if (matches.empty()) return;
    std::vector<std::pair<std::string, HostTensor>> constants;
    std::vector<Layer> added;
    std::set<size_t> removed;
    for (const Match& m : matches) {
      Layer attention = index.layer(m.attention);
      attention.attributes[fused::kAttentionInterleaved[fused::kAttentionOutput]] = int64_t(1);
      if (!context.supports(attention)) continue;
      const std::string& y = index.layer(m.toBatchFirst).outputs[0];
      const std::string heads = uniqueTensorName(network, attention.outputs[0] + "/batch_first");
      attention.outputs = {heads};
      auto shape = [&](const std::string& suffix, std::vector<int64_t> dims) {
        const std::string name = uniqueTensorName(network, attention.name + suffix);
        constants.emplace_back(name, HostTensor::fromVector<int64_t>({int64_t(dims.size())}, dims));
        return name;
      };
      const std::string merged = uniqueTensorName(network, heads + "/merged"), rows = merged + "/rows";
      Layer product = index.layer(m.projection);
      const std::string projected = uniqueTensorName(network, product.outputs[0] + "/batch_first");
      added.push_back(reshapeLayer(attention.name + "/merge_heads", heads,
                                   shape("/merged_shape", {m.batch, m.length, m.heads * m.depth}), merged,
                                   mergedOrigins(network, {m.toSequenceFirst})));
      added.push_back(reshapeLayer(attention.name + "/rows", merged,
                                   shape("/rows_shape", {m.batch * m.length, m.heads * m.depth}), rows,
                                   mergedOrigins(network, {m.flatten})));
      product.inputs[0] = rows;
      product.outputs = {projected};
      added.push_back(reshapeLayer(product.name + "/unflatten", projected,
                                   shape("/unflatten_shape", {m.batch, m.length, m.width}), y,
                                   mergedOrigins(network, {m.unflatten, m.toBatchFirst})));
      added.push_back(std::move(product));
      added.push_back(std::move(attention));
      removed.insert({m.attention, m.toSequenceFirst, m.flatten, m.projection, m.unflatten, m.toBatchFirst});
      context.note("kiln.Attention '" + index.layer(m.attention).name + "' writes batch-first rows for '" +
                   index.layer(m.projection).name + "'; its two Transposes go");
    }
    for (auto& [name, value] : constants) network.addConstant(name, std::move(value));
    eraseLayers(network, removed);
    for (Layer& layer : added) {
      for (const std::string& out : layer.outputs) network.addTensor(out);
      network.addLayer(std::move(layer));
    }
    network.sortLayersTopologically();
  }
};

}  // namespace

std::unique_ptr<Pass> createFoldAttentionOutputLayoutPass() {
  return std::make_unique<FoldAttentionOutputLayoutPass>();
}

}  // namespace kiln
