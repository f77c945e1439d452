// CPU reference kernels for the recurrent op family.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerRecurrentCpuKernels(CpuKernelRegistry& registry) { (void)registry; }

}  // namespace kiln
