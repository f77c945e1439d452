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

class FuseMatMulEpiloguePass final : public EpilogueFusionPass {
 public:
  FuseMatMulEpiloguePass() : EpilogueFusionPass(fused::kFusedMatMul) {}
  std::string name() const override { return "FuseMatMulEpilogue"; }

 private:
  std::optional<Candidate> match(const Network& network, const GraphIndex& index,
                                 const Layer& anchor) const override {
    bool gemm = isOp(anchor, "Gemm");
    if (!(gemm || isOp(anchor, "MatMul")) || !anchor.hasOutput(0) || anchor.outputs.size() != 1) return std::nullopt;
    const Tensor* out = network.findTensor(anchor.outputs[0]);
    if (!out || out->dtype != DataType::kFloat32 || !out->shape.hasRank() || out->shape.rank() == 0)
      return std::nullopt;
    const Dim& lastDim = out->shape[out->shape.rank() - 1];

    Candidate candidate{{}, anchor, std::nullopt};
    EpilogueMatch& epilogue = candidate.match;
    epilogue.output = anchor.outputs[0];
    std::string bias = gemm && anchor.hasInput(2) ? anchor.inputs[2] : "";
    bool biasFree = !(gemm && anchor.hasInput(2));
    if (biasFree && lastDim.isKnown()) {
      auto accept = [&](const HostTensor& v) { return isPerColumn(v, out->shape.rank(), lastDim.value()); };
      if (auto add = matchBiasAdd(network, index, epilogue.output, accept)) {
        bias = add->constant;
        epilogue.layers.push_back(add->layer);
        epilogue.output = index.layer(add->layer).outputs[0];
      }
    }
    matchEpilogueTail(network, index, epilogue);
    // Gemm adds beta * C; a bias that came from an Add (Gemm had no C) must be added once.
    if (gemm && biasFree && !bias.empty()) candidate.fused.attributes["beta"] = 1.0f;
    candidate.fused.inputs = {anchor.inputs[0], anchor.inputs[1], bias};
    return candidate;
  }
};

}  // namespace

std::unique_ptr<Pass> createFuseMatMulEpiloguePass() { return std::make_unique<FuseMatMulEpiloguePass>(); }

}  // namespace kiln
