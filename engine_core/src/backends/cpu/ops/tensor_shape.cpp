// CPU reference kernels for the tensor_shape op family.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerTensorShapeCpuKernels(CpuKernelRegistry& registry) {
  // Identity passes its value through (tensors, sequences and optionals alike) without copying.
  registry.add("Identity", [](KernelContext& ctx) { ctx.setOutputValue(0, ctx.inputValue(0)); });
}

}  // namespace kiln
