// CPU kernel for Einsum.
#include <kernels/cpu/gemm/einsum.h>

#include "matmul_quant.h"

namespace kiln {
namespace {

void runEinsum(KernelContext& ctx) {
  std::vector<std::vector<int64_t>> dims;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    dims.push_back(ctx.input(i).dims());
    ranks.push_back(int64_t(dims.back().size()));
  }
  kernels::EinsumEquation equation;
  if (auto err = kernels::parseEinsumEquation(ctx.layer().attrString("equation"), ranks, equation); !err.empty())
    ctx.fail(err);
  HostTensor& y = ctx.allocateOutput(0);
  dispatchGemmType(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<const T*> inputs;
    for (size_t i = 0; i < ctx.inputCount(); ++i) inputs.push_back(ctx.input(i).data<T>());
    kernels::einsum<T>(equation, inputs, dims, y.data<T>());
  });
}

}  // namespace

void registerEinsumCpuKernel(CpuKernelRegistry& registry) { registry.add("Einsum", runEinsum); }

}  // namespace kiln
