#pragma once
// NumPy .npy files (format versions 1.0-3.0): the exchange format of `kiln run` inputs and outputs.
// Numeric dtypes and bool, C order only. float16 maps to numpy '<f2'; bfloat16 and fp8 have no
// numpy dtype and are rejected (convert them to float32 first).
#include <kiln/file_io.h>
#include <kiln/host_tensor.h>

#include <string>
#include <string_view>

namespace kiln {

// Decodes a whole .npy file held in memory. `source` names it in errors (a path, "stdin", ...).
// Throws kiln::Error(kInvalidArgument) for bad magic or headers, fortran order, object or
// structured arrays, unsupported dtypes, and data sizes that disagree with the declared shape.
HostTensor parseNpy(std::string_view bytes, const std::string& source);
// Encodes a tensor as .npy bytes (little-endian, C order). Throws kUnsupported for dtypes numpy
// cannot represent (bfloat16, fp8, string).
std::string serializeNpy(const HostTensor& tensor);

HostTensor readNpyFile(const std::string& path);
// Writes atomically: a reader never sees a half-written file.
void writeNpyFile(const HostTensor& tensor, const std::string& path);


}  // namespace kiln
