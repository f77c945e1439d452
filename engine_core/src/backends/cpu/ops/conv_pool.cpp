// CPU reference kernels for the conv_pool op family.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerConvPoolCpuKernels(CpuKernelRegistry& registry) { (void)registry; }

}  // namespace kiln
