// CPU reference kernels for the normalization op family.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerNormalizationCpuKernels(CpuKernelRegistry& registry) { (void)registry; }

}  // namespace kiln
