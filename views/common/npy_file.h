#pragma once
// Reads NumPy .npy files (format versions 1-3, C order, little-endian numbers and bools), the
// usual way people hand over input data for a model.
#include <kiln/host_tensor.h>

#include <string>

namespace kiln::views {

// Throws kiln::Error naming the file and what is wrong (Fortran order, unsupported dtype, truncation).
HostTensor readNpyFile(const std::string& path);

}  // namespace kiln::views
