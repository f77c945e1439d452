// kiln.Attention whose Q, K and V are only re-indexed slices of one tensor laid
// out
// [..., L, 3, H, D] (a merged QKV projection, then a Split or Gathers, Reshapes
// and Transposes)
// -> the attention reads that tensor in place (qkv_packed): the copies between
// go. The chains are followed as strided views (strided_views.h), so BERT's
// Split, and the slicing of nn.MultiheadAttention's packed in-projection with
// its reshapes, are both seen through. Where the projection runs on a
// sequence-first copy of its input (Transpose(x) then a row-wise product), it
// is run on x instead: the rows come out batch-first, which is the packed
// layout, and the Transpose goes too.
#include "../ops/fused.h"
#include "graph_utils.h"
#include "passes.h"
#include "strided_views.h"

#include <algorithm>
#include <set>

namespace kiln {
namespace {

using namespace passes;

// A product that treats rows alone (y row r depends on x row r only): a MatMul
// or kiln.FusedMatMul over MatMul with 2-D constant weights and no residual.
bool isRowWise(const Network& network, const Layer& layer) {
  const bool fusedMatMul = layer.domain == fused::kDomain && layer.opType == fused::kFusedMatMul &&
                           layer.attrString(fused::kBase, "") == "MatMul" && !layer.hasInput(3);
  if (!(isOp(layer, "MatMul") || fusedMatMul) || layer.inputs.size() < 2 || layer.outputs.size() != 1) return false;
  const HostTensor* w = constantValue(network, layer.inputs[1]);
  if (!w || w->rank() != 2) return false;
  if (!fusedMatMul || !layer.hasInput(2)) return true;
  const HostTensor* bias = constantValue(network, layer.inputs[2]);
  return bias && bias->elementCount() == w->dim(1);
}

// How the base is laid out: as it is, or as a row-wise product that could run
// on x before the Transpose in front of it.
struct Base {
  std::string tensor;               // the tensor the chains start from
  std::vector<int64_t> storedDims;  // the dense tensor the attention will read
  StridedView view;                 // the base's elements as a view of that dense tensor
  std::optional<size_t> product,
      transpose;  // the product to re-run on x, and the Transpose it read
};

std::vector<Base> basesOf(const Network& network, const GraphIndex& index, const std::string& tensor) {
  std::vector<Base> bases;
  const auto dims = knownDims(network, tensor);
  if (!dims) return bases;
  const Base asItIs{tensor, *dims, StridedView::dense(*dims), std::nullopt, std::nullopt};
  const auto producer = index.producer(tensor);
  const Layer* transpose = producer && isRowWise(network, index.layer(*producer))
                               ? index.producerOfType(index.layer(*producer).inputs[0], "Transpose")
                               : nullptr;
  const auto x = transpose && transpose->hasInput(0) ? knownDims(network, transpose->inputs[0]) : std::nullopt;
  const std::vector<int64_t> perm = transpose ? transpose->attrInts("perm") : std::vector<int64_t>{};
  // Only a Transpose that keeps the rows' last dim commutes with the product.
  // Re-running the product comes first where both fit (batch 1): the Transpose
  // goes too.
  if (x && perm.size() == x->size() && perm.size() == dims->size() && perm.back() == int64_t(perm.size()) - 1) {
    std::vector<int64_t> unpermuted = *x;
    unpermuted.back() = dims->back();
    bases.push_back(
        {tensor, unpermuted, StridedView::permuted(unpermuted, perm), *producer, index.indexOf(*transpose)});
  }
  bases.push_back(asItIs);
  return bases;
}

// Q, K or V as the attention computes on it ([..., H, L, D]): the stored view
// with rows and heads swapped back where interleaved. Its sizes and strides,
// when each dim is one stride.
std::optional<std::pair<std::vector<int64_t>, std::vector<int64_t>>> computedView(const StridedView& stored,
                                                                                  bool interleaved, int64_t& offset) {
  StridedView view = stored;
  if (interleaved) view.dims = fused::swapRowsAndHeads(std::move(view.dims));
  const auto strides = view.strides();
  if (!strides) return std::nullopt;
  offset = view.offset;
  return std::make_pair(view.sizes(), *strides);
}

// The packed dims [..., L, 3, H, D] when the three views are parts 0, 1, 2 of
// that dense layout.
std::optional<std::vector<int64_t>> packedDimsOf(const std::vector<StridedView>& views, const Layer& attention,
                                                 int64_t baseElements) {
  std::vector<int64_t> packed;
  for (size_t part = 0; part < 3; ++part) {
    int64_t offset = 0;
    const auto computed = computedView(views[part], fused::attentionInterleaved(attention, part), offset);
    if (!computed) return std::nullopt;
    const auto& [sizes, strides] = *computed;
    const size_t rank = sizes.size();
    if (rank < 4) return std::nullopt;  // heads must be a dim of their own
    // [batch..., H, L, D] -> [batch..., L, 3, H, D]
    std::vector<int64_t> expected(sizes.begin(), sizes.end() - 3);
    const int64_t h = sizes[rank - 3], l = sizes[rank - 2], d = sizes[rank - 1];
    expected.insert(expected.end(), {l, 3, h, d});
    if (part == 0) packed = expected;
    if (expected != packed) return std::nullopt;
    const StridedView dense = StridedView::dense(packed);
    const auto denseStrides = *dense.strides();
    std::vector<int64_t> wanted(denseStrides.begin(), denseStrides.end() - 4);
    const size_t b = wanted.size();
    wanted.insert(wanted.end(), {denseStrides[b + 2], denseStrides[b], denseStrides[b + 3]});
    if (offset != int64_t(part) * denseStrides[b + 1]) return std::nullopt;
    for (size_t i = 0; i < rank; ++i)  // a dim of one element has no stride to match
      if (sizes[i] != 1 && strides[i] != wanted[i]) return std::nullopt;
  }
  if (elementCount(packed) != baseElements) return std::nullopt;
  return packed;
}

struct Packing {
  size_t attention;
  Base base;
  std::vector<int64_t> packedDims;
  std::vector<size_t> chainLayers;  // what the packed view replaces (dead once
                                    // the attention reads it)
};

std::optional<Packing> packingOf(const Network& network, const GraphIndex& index, size_t at) {
  const Layer& attention = index.layer(at);
  if (attention.domain != fused::kDomain || attention.opType != fused::kAttention ||
      fused::attentionPacked(attention) || attention.attrInt("k_transposed", 0) != 0 || attention.inputs.size() < 3)
    return std::nullopt;
  std::vector<ViewChain> chains;
  for (size_t part = 0; part < 3; ++part) {
    chains.push_back(viewChainTo(index, attention.inputs[part]));
    if (chains.back().steps.empty() || chains.back().base != chains.front().base) return std::nullopt;
  }
  for (const Base& base : basesOf(network, index, chains.front().base)) {
    std::vector<StridedView> views;
    for (const ViewChain& chain : chains)
      if (auto view = viewAlong(network, index, chain, base.view)) views.push_back(*view);
    if (views.size() != 3) continue;
    if (auto packed = packedDimsOf(views, attention, elementCount(base.storedDims))) {
      std::set<size_t> chainLayers;
      for (const ViewChain& chain : chains)
        for (const ViewChain::Step& step : chain.steps) chainLayers.insert(step.layer);
      // A product re-run on x replaces the old one: nothing but the chains may
      // read that.
      if (base.product && !index.usedOnlyBy(base.tensor, chainLayers)) continue;
      return Packing{at, base, *packed, std::vector<size_t>(chainLayers.begin(), chainLayers.end())};
    }
  }
  return std::nullopt;
}

class PackAttentionInputsPass final : public Pass {
 public:
  std::string name() const override { return "PackAttentionInputs"; }

 private:
  void apply(Network& network, PassContext& context) override {
    GraphIndex index(network);
    std::vector<Packing> packings;
    for (size_t i = 0; i < network.layers().size(); ++i)
      if (auto p = packingOf(network, index, i)) packings.push_back(std::move(*p));
    if (packings.empty()) return;
    std::vector<Layer> added;
    std::vector<std::pair<std::string, HostTensor>> constants;
    Rewriter rewriter(network);
    for (const Packing& p : packings) {
      const Layer& old = index.layer(p.attention);
      std::string base = p.base.tensor;
      if (p.base.product) {  // the product on x: batch-first rows
        Layer product = index.layer(*p.base.product);
        product.name += "/batch_first";
        product.inputs[0] = index.layer(*p.base.transpose).inputs[0];
        base = uniqueTensorName(network, p.base.tensor + "/batch_first");
        product.outputs = {base};
        if (!context.supports(product)) continue;
        added.push_back(std::move(product));
      }
      Layer view;
      view.name = old.name + "/packed_qkv";
      view.opType = "Reshape";
      view.opsetVersion = 14;
      const std::string shape = uniqueTensorName(network, old.name + "/packed_qkv_shape");
      view.inputs = {base, shape};
      view.outputs = {uniqueTensorName(network, old.name + "/packed_qkv")};
      view.origins = mergedOrigins(network, p.chainLayers);
      Layer attention = old;
      attention.attributes[fused::kAttentionPacked] = int64_t(1);
      for (size_t part = 0; part < 3; ++part) {
        attention.attributes[fused::kAttentionInterleaved[part]] = int64_t(1);
        attention.inputs[part] = view.outputs[0];
      }
      if (!context.supports(attention)) {
        if (p.base.product) added.pop_back();
        continue;
      }
      context.note("kiln.Attention '" + old.name + "' reads Q, K and V in place from '" + p.base.tensor +
                   (p.base.product ? "' (its product run batch-first)" : "'"));
      constants.emplace_back(shape, HostTensor::fromVector<int64_t>({int64_t(p.packedDims.size())}, p.packedDims));
      added.push_back(std::move(view));
      rewriter.replace({p.attention}, std::move(attention));
    }
    rewriter.commit();
    for (auto& [name, value] : constants) network.addConstant(name, std::move(value));
    for (Layer& layer : added) {
      for (const std::string& out : layer.outputs) network.addTensor(out);
      network.addLayer(std::move(layer));
    }
    network.sortLayersTopologically();
  }
};

}  // namespace

std::unique_ptr<Pass> createPackAttentionInputsPass() { return std::make_unique<PackAttentionInputsPass>(); }

}  // namespace kiln
