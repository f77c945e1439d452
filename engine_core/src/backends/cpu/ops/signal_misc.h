#pragma once
// The signal_misc op family's CPU kernel files: signal processing in signal_misc.cpp, detection and
// sampling, text, and random generation in signal_misc_*.cpp.
#include "../cpu_kernel.h"

namespace kiln {

void registerDetectionCpuKernels(CpuKernelRegistry& registry);
void registerTextCpuKernels(CpuKernelRegistry& registry);
void registerRandomCpuKernels(CpuKernelRegistry& registry);

}  // namespace kiln
