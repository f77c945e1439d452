// CPU reference kernels for the tensor_shape op family, spread over tensor_shape_{views,copies,
// indexing,resize}.cpp; the numeric work lives in kernels/cpu/layout and kernels/cpu/resize.
#include "../../../ops/op_families.h"
#include "tensor_shape_kernels.h"

namespace kiln {

namespace tensor_shape {

ValueOf valuesOf(const KernelContext& ctx) {
  return [&ctx](size_t i) { return ctx.hasInput(i) ? &ctx.input(i) : nullptr; };
}

std::vector<int64_t> normalizedIndices(const KernelContext& ctx, size_t input, int64_t limit, const char* what) {
  std::vector<int64_t> indices = ctx.input(input).toInt64Vector();
  for (int64_t& i : indices) {
    if (i < -limit || i >= limit)
      ctx.fail(std::string(what) + " value " + std::to_string(i) + " is out of range for an axis of length " +
               std::to_string(limit) + "; valid values are [" + std::to_string(-limit) + ", " +
               std::to_string(limit - 1) + "]");
    if (i < 0) i += limit;
  }
  return indices;
}

}  // namespace tensor_shape

void registerTensorShapeCpuKernels(CpuKernelRegistry& registry) {
  // Identity passes its value through (tensors, sequences and optionals alike) without copying.
  registry.add("Identity", [](KernelContext& ctx) { ctx.setOutputValue(0, ctx.inputValue(0)); });
  tensor_shape::registerViewKernels(registry);
  tensor_shape::registerCopyKernels(registry);
  tensor_shape::registerIndexingKernels(registry);
  tensor_shape::registerResizeKernels(registry);
}

}  // namespace kiln
