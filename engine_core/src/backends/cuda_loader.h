#pragma once
// Finds and loads the CUDA backend module (libkiln_cuda_backend.so) the first time a build or a
// plan asks for the CUDA backend: next to the program, in its ../lib/kiln, where KILN_BACKEND_DIR
// says, or where the build put it. Throws kUnsupported with one line that says why (this Kiln was
// built without it, the module or a CUDA library it needs is missing, no GPU) and what to do.
#include "backend.h"

#include <memory>

namespace kiln {

std::shared_ptr<const Backend> loadCudaBackend();

}  // namespace kiln
