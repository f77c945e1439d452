// CPU reference kernels for the reduction_softmax op family.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerReductionSoftmaxCpuKernels(CpuKernelRegistry& registry) { (void)registry; }

}  // namespace kiln
