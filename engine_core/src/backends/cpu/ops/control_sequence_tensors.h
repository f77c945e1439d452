#pragma once
// Cutting tensors apart and joining them along an axis: shared by the sequence ops (SplitToSequence,
// ConcatFromSequence) and by Loop / Scan, which stack per-iteration outputs.
#include "../cpu_kernel.h"

#include <vector>

namespace kiln {

// Elements [start, start + length) of `axis`; the axis is kept.
HostTensor sliceAlongAxis(const HostTensor& in, size_t axis, int64_t start, int64_t length);
// Item `index` of `axis`, with that axis removed.
HostTensor itemAlongAxis(const HostTensor& in, size_t axis, int64_t index);
// Joins tensors of one type whose dims agree except on `axis`.
HostTensor concatAlongAxis(const KernelContext& ctx, const std::vector<HostTensor>& parts, size_t axis);
// Stacks same-shaped tensors on a new axis `axis` (0 ≤ axis ≤ rank).
HostTensor stackAlongAxis(const KernelContext& ctx, const std::vector<HostTensor>& parts, size_t axis);

// The single value of a one-element tensor input (positions, trip counts, conditions).
int64_t scalarInput(const KernelContext& ctx, size_t i, const char* what);

}  // namespace kiln
