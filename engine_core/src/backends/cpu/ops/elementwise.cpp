// CPU reference kernels for the elementwise op family.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerElementwiseCpuKernels(CpuKernelRegistry& registry) { (void)registry; }

}  // namespace kiln
