#pragma once
// The test device backend ("cpu-device"): runs the CPU backend's kernels and tactics, but its
// memory is "device" memory the runtime may not touch. Its addresses are host addresses with bit 55
// set, which fault on x86-64 (not canonical) and on AArch64 (kernel half) when dereferenced, so
// any place where the runtime reads or writes a device tensor without an explicit copy crashes
// in CI. Every access through its streams and steps is checked against the live allocations, and
// fresh memory is poisoned (0xFF bytes, NaN in floats), so unwritten outputs show.
//
// Its steps read and write exactly their precision's storage type (as a GPU backend's would), so
// builds for it insert Cast layers; layers it refuses fall back to the CPU with Copy layers.
// KILN_TEST_DEVICE_REFUSE=Op1,Op2 (read at each build) makes it refuse those op types, which tests
// use to force mixed placements.
#include "../backend.h"

#include <memory>

namespace kiln {

std::unique_ptr<Backend> makeTestDeviceBackend();

}  // namespace kiln
