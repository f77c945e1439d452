#include "einsum.h"

#include <map>

namespace kiln::kernels::cuda {

std::string planEinsum(const EinsumEquation& equation, const std::vector<std::vector<int64_t>>& inputDims,
                       EinsumContraction& out) {
  out = EinsumContraction{};
  const size_t operands = equation.inputLabels.size();
  if (operands != inputDims.size()) return "the equation names " + std::to_string(operands) + " operands";
  if (operands == 0 || operands > size_t(kEinsumMaxOperands))
    return "the CUDA Einsum takes 1 to " + std::to_string(kEinsumMaxOperands) + " operands";
  std::map<int, int64_t> sizes;  // label -> size (a dim of 1 broadcasts)
  for (size_t i = 0; i < operands; ++i) {
    if (equation.inputLabels[i].size() != inputDims[i].size()) return "operand " + std::to_string(i) + "'s rank differs";
    for (size_t p = 0; p < inputDims[i].size(); ++p) {
      const int label = equation.inputLabels[i][p];
      const int64_t dim = inputDims[i][p];
      auto [it, fresh] = sizes.emplace(label, dim);
      if (fresh || it->second == dim || dim == 1) continue;
      if (it->second == 1) it->second = dim;
      else return "label sizes " + std::to_string(it->second) + " and " + std::to_string(dim) + " do not broadcast";
    }
  }
  std::vector<int> kept = equation.outputLabels, summed;
  for (const auto& [label, size] : sizes) {
    bool inOutput = false;
    for (int l : kept) inOutput = inOutput || l == label;
    if (!inOutput) summed.push_back(label);
  }
  if (kept.size() > size_t(kEinsumMaxLabels) || summed.size() > size_t(kEinsumMaxLabels))
    return "the CUDA Einsum takes at most " + std::to_string(kEinsumMaxLabels) + " kept and summed labels";
  out.operands = int(operands);
  out.kept = int(kept.size());
  out.summed = int(summed.size());
  auto strideOf = [&](size_t i, int label) {
    int64_t stride = 1, total = 0;
    const auto& dims = inputDims[i];
    for (size_t p = dims.size(); p-- > 0;) {
      if (equation.inputLabels[i][p] == label && dims[p] != 1) total += stride;
      stride *= dims[p];
    }
    return total;
  };
  for (size_t l = 0; l < kept.size(); ++l) {
    auto it = sizes.find(kept[l]);
    out.keptSizes[l] = it == sizes.end() ? 1 : it->second;
    out.outputCount *= out.keptSizes[l];
    for (size_t i = 0; i < operands; ++i) out.keptStrides[i][l] = strideOf(i, kept[l]);
  }
  for (size_t l = 0; l < summed.size(); ++l) {
    out.summedSizes[l] = sizes[summed[l]];
    out.summedCount *= out.summedSizes[l];
    for (size_t i = 0; i < operands; ++i) out.summedStrides[i][l] = strideOf(i, summed[l]);
  }
  return "";
}

}  // namespace kiln::kernels::cuda
