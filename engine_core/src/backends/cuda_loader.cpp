#include "cuda_loader.h"

#include <kiln/error.h>

#include "module_loader.h"

#include <string>

namespace kiln {

std::shared_ptr<const Backend> loadCudaBackend() {
#ifndef KILN_WITH_CUDA_BACKEND
  throw Error(ErrorCode::kUnsupported, "this Kiln was built without the CUDA backend; use --backend cpu, or build "
                                       "Kiln on a machine with NVIDIA's CUDA toolkit");
#else
  constexpr const char* kModule = "libkiln_cuda_backend.so";
  std::string why;
  const auto module = openKilnModule(kModule, KILN_CUDA_BACKEND_BUILD_PATH, why);
  if (!module)
    throw Error(ErrorCode::kUnsupported,
                "the CUDA backend could not be loaded" +
                    (why.empty() ? std::string(" (") + kModule + " not found)" : ": " + why) +
                    "; it needs NVIDIA's driver and CUDA 13 libraries (cuBLASLt, cuDNN 9, NVRTC) on the library "
                    "path, or use --backend cpu");
  using Factory = Backend* (*)();
  auto make = reinterpret_cast<Factory>(moduleSymbol(*module, "kiln_make_cuda_backend", "Kiln's CUDA backend"));
  // The module stays loaded for the life of the process: its backend and steps live as long.
  return std::shared_ptr<const Backend>(make());
#endif
}

}  // namespace kiln
