// CPU kernels of the elementwise op family: binary and variadic broadcasting ops
// (elementwise_binary.cpp), unary math and activations (elementwise_unary.cpp), Cast and CastLike
// (elementwise_cast.cpp). The numeric work is in kernels/cpu/elementwise/.
#include "elementwise.h"

#include "../../../ops/op_families.h"

namespace kiln {

void registerElementwiseCpuKernels(CpuKernelRegistry& registry) {
  registerElementwiseBinaryCpuKernels(registry);
  registerElementwiseUnaryCpuKernels(registry);
  registerElementwiseCastCpuKernels(registry);
}

kernels::BroadcastPlan broadcastPlan(const HostTensor& out, std::initializer_list<const HostTensor*> inputs) {
  std::vector<std::vector<int64_t>> dims;
  for (const HostTensor* in : inputs) dims.push_back(in->dims());
  return kernels::BroadcastPlan(out.dims(), dims);
}

}  // namespace kiln
