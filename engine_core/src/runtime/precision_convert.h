#pragma once
// Converting activations between fp32 and the reduced storage types (fp16, bf16) of an engine.
#include <kiln/host_tensor.h>

namespace kiln {

// A new fp32 tensor holding `t` (fp16 or bf16) widened.
HostTensor widenToFloat32(const HostTensor& t);
// Narrows an fp32 tensor to fp16/bf16 in its own storage (writes trail reads, so in place is safe)
// and returns the narrowed view.
HostTensor narrowInPlace(const HostTensor& t, DataType to);
// Converts n float elements between float32 and fp16/bf16 (either direction, or a plain copy when
// the types are equal) from `in` to `out` (host memory, not overlapping).
void convertFloatStorage(DataType from, const void* in, DataType to, void* out, int64_t n);
// Rounds an fp32 tensor through fp16/bf16 and back (what storing it in that type loses).
HostTensor roundThrough(const HostTensor& t, DataType storage);

}  // namespace kiln
