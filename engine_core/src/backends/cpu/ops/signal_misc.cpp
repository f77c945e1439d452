// CPU reference kernels for the signal_misc op family.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerSignalMiscCpuKernels(CpuKernelRegistry& registry) { (void)registry; }

}  // namespace kiln
