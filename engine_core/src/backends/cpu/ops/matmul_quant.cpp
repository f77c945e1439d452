// CPU reference kernels for the matmul_quant op family.
#include "../../../ops/op_families.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerMatMulQuantCpuKernels(CpuKernelRegistry& registry) { (void)registry; }

}  // namespace kiln
