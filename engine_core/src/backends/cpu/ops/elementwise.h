#pragma once
// Shared pieces of the elementwise family's CPU kernels (elementwise*.cpp in this folder).
#include "../cpu_kernel.h"

#include <kernels/cpu/elementwise/broadcast.h>

#include <initializer_list>

namespace kiln {

void registerElementwiseBinaryCpuKernels(CpuKernelRegistry& registry);
void registerElementwiseUnaryCpuKernels(CpuKernelRegistry& registry);
void registerElementwiseCastCpuKernels(CpuKernelRegistry& registry);

// The broadcast plan of `inputs` onto `out` (which has the inferred, broadcast shape).
kernels::BroadcastPlan broadcastPlan(const HostTensor& out, std::initializer_list<const HostTensor*> inputs);

}  // namespace kiln
