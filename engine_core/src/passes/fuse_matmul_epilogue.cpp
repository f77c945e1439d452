// Gemm / MatMul + bias Add + activation + residual Add -> one kiln.FusedMatMul. The bias of a
// MatMul is a per-column vector added in the epilogue; for a Gemm without C it becomes Gemm's C.
#include "../ops/fused.h"
#include "epilogue_match.h"
#include "passes.h"

namespace kiln {
namespace {

using namespace passes;

// A constant of N values whose dims other than the last are 1: one value per output column.
bool isPerColumn(const HostTensor& value, size_t outputRank, int64_t columns) {
  if (value.elementCount() != columns || value.rank() == 0 || value.rank() > outputRank) return false;
  return value.dims().back() == columns;
}

class FuseMatMulEpiloguePass final : public Pass {
 public:
  std::string name() const override { return "FuseMatMulEpilogue"; }

 private:
  void apply(Network& network, PassContext& context) override {
    repeatUntilStable(network, [&](Network& net) { return sweep(net, context); });
  }

  size_t sweep(Network& network, PassContext& context) {
    GraphIndex index(network);
    Rewriter rewriter(network);
    for (size_t i : network.topologicalOrder()) {
      const Layer& anchor = network.layers()[i];
      bool gemm = isOp(anchor, "Gemm");
      if (!(gemm || isOp(anchor, "MatMul")) || !anchor.hasOutput(0) || anchor.outputs.size() != 1) continue;
      const Tensor* out = network.findTensor(anchor.outputs[0]);
      if (!out || out->dtype != DataType::kFloat32 || !out->shape.hasRank() || out->shape.rank() == 0) continue;
      const Dim& lastDim = out->shape[out->shape.rank() - 1];

      EpilogueMatch match;
      match.output = anchor.outputs[0];
      std::string bias = gemm && anchor.hasInput(2) ? anchor.inputs[2] : "";
      bool biasFree = !(gemm && anchor.hasInput(2));
      if (biasFree && lastDim.isKnown()) {
        auto accept = [&](const HostTensor& v) { return isPerColumn(v, out->shape.rank(), lastDim.value()); };
        if (auto add = matchBiasAdd(network, index, match.output, accept)) {
          bias = add->constant;
          match.layers.push_back(add->layer);
          match.output = index.layer(add->layer).outputs[0];
        }
      }
      matchEpilogueTail(network, index, match);
      std::vector<size_t> group{i};
      group.insert(group.end(), match.layers.begin(), match.layers.end());
      if (match.layers.empty() || rewriter.claimed(group)) continue;

      Layer fusedLayer = anchor;
      fusedLayer.domain = fused::kDomain;
      fusedLayer.opType = fused::kFusedMatMul;
      fusedLayer.attributes[fused::kBase] = anchor.opType;
      // Gemm adds beta * C; a bias that came from an Add (Gemm had no C) must be added once.
      if (gemm && biasFree && !bias.empty()) fusedLayer.attributes["beta"] = 1.0f;
      setEpilogueAttributes(fusedLayer, match);
      fusedLayer.inputs = {anchor.inputs[0], anchor.inputs[1], bias};
      if (!match.residual.empty()) fusedLayer.inputs.push_back(match.residual);
      while (fusedLayer.inputs.back().empty()) fusedLayer.inputs.pop_back();
      fusedLayer.outputs = {match.output};
      fusedLayer.origins.clear();
      if (!context.supports(fusedLayer)) continue;
      context.note("fused " + describeLayers(network, group) + " into kiln.FusedMatMul");
      rewriter.replace(group, std::move(fusedLayer));
    }
    return rewriter.commit();
  }
};

}  // namespace

std::unique_ptr<Pass> createFuseMatMulEpiloguePass() { return std::make_unique<FuseMatMulEpiloguePass>(); }

}  // namespace kiln
