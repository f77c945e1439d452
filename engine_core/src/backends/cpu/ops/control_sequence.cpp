// CPU reference kernels for the control_sequence op family.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerControlSequenceCpuKernels(CpuKernelRegistry& registry) { (void)registry; }

}  // namespace kiln
