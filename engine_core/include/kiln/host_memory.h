#pragma once
// Process-wide host memory policy, for programs (the kiln CLI, Kiln Studio, benchmarks) rather
// than for libraries that embed Kiln.

namespace kiln {

// Keeps freed tensor buffers in the process heap for reuse. glibc otherwise maps buffers above its
// (adaptive) threshold afresh for every allocation and unmaps them when freed, so each run of the
// reference executor, which allocates every output, pays page faults and zeroing on fresh pages
// (ResNet-18: 25 -> 45-55 ms a run). The price is memory kept by the process after a peak.
void keepFreedHostMemory();

}  // namespace kiln
