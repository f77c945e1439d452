// Type and shape inference for Einsum.
#include <kernels/cpu/gemm/einsum.h>

#include "matmul_quant.h"

namespace kiln {
namespace {

void inferEinsum(InferenceContext& ctx) {
  const DataType type = ctx.inputType(0);
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    if (ctx.inputType(i) != type)
      ctx.fail("input " + std::to_string(i) + " has type " + std::string(toString(ctx.inputType(i))) +
               ", expected " + std::string(toString(type)) + " like input 0");
    if (!ctx.inputShape(i).hasRank()) return ctx.setOutput(0, type, Shape::unknownRank());
    ranks.push_back(int64_t(ctx.inputShape(i).rank()));
  }
  kernels::EinsumEquation equation;
  const std::string text = ctx.layer().attrString("equation");
  if (auto err = kernels::parseEinsumEquation(text, ranks, equation); !err.empty()) ctx.fail(err);

  bool allKnown = true;
  for (size_t i = 0; i < ctx.inputCount(); ++i) allKnown = allKnown && ctx.inputShape(i).isFullyKnown();
  if (allKnown) {
    std::vector<std::vector<int64_t>> dims;
    for (size_t i = 0; i < ctx.inputCount(); ++i) dims.push_back(ctx.inputShape(i).knownDims());
    std::vector<int64_t> out;
    if (auto err = kernels::einsumOutputDims(equation, dims, out); !err.empty()) ctx.fail(err);
    return ctx.setOutput(0, type, Shape::fromDims(out));
  }
  // A label's size is any occurrence's other than 1 (1 broadcasts); a symbol when that is all we know.
  std::vector<Dim> out;
  for (int label : equation.outputLabels) {
    Dim size = Dim::unknown();
    bool allUnit = true;
    for (size_t i = 0; i < ctx.inputCount(); ++i)
      for (size_t d = 0; d < equation.inputLabels[i].size(); ++d) {
        if (equation.inputLabels[i][d] != label) continue;
        const Dim& dim = ctx.inputShape(i)[d];
        allUnit = allUnit && dim.isKnown() && dim.value() == 1;
        if ((dim.isKnown() && dim.value() != 1) || (!size.isKnown() && dim.isSymbol())) size = dim;
      }
    out.push_back(allUnit ? Dim(1) : size);
  }
  ctx.setOutput(0, type, Shape(std::move(out)));
}

}  // namespace

void registerEinsumSchema(OpSchemaRegistry& registry) { registry.add({"", "Einsum", inferEinsum, 1, -1}); }

}  // namespace kiln
