#include "cuda_loader.h"

#include <kiln/error.h>

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln {
namespace {

constexpr const char* kModule = "libkiln_cuda_backend.so";

std::vector<std::string> candidatePaths() {
  std::vector<std::string> paths;
  if (const char* dir = std::getenv("KILN_BACKEND_DIR")) paths.push_back(std::string(dir) + "/" + kModule);
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::filesystem::path dir = std::filesystem::path(std::string(exe, size_t(n))).parent_path();
    for (const char* relative : {".", "../lib/kiln", "../lib"}) paths.push_back((dir / relative / kModule).string());
  }
#ifdef KILN_CUDA_BACKEND_BUILD_PATH
  paths.push_back(KILN_CUDA_BACKEND_BUILD_PATH);
#endif
  paths.push_back(kModule);  // the loader's own search path last
  return paths;
}

}  // namespace

std::shared_ptr<const Backend> loadCudaBackend() {
#ifndef KILN_WITH_CUDA_BACKEND
  throw Error(ErrorCode::kUnsupported, "this Kiln was built without the CUDA backend; use --backend cpu, or build "
                                       "Kiln on a machine with NVIDIA's CUDA toolkit");
#else
  std::string why;
  for (const std::string& path : candidatePaths()) {
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) continue;
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) {
      why = dlerror();
      continue;
    }
    using Factory = Backend* (*)();
    auto make = reinterpret_cast<Factory>(dlsym(module, "kiln_make_cuda_backend"));
    if (!make)
      throw Error(ErrorCode::kUnsupported, path + " is not Kiln's CUDA backend (no kiln_make_cuda_backend); "
                                                  "reinstall Kiln");
    // The module stays loaded for the life of the process: its backend and steps live as long.
    return std::shared_ptr<const Backend>(make());
  }
  throw Error(ErrorCode::kUnsupported,
              "the CUDA backend could not be loaded" + (why.empty() ? std::string(" (") + kModule + " not found)" : ": " + why) +
                  "; it needs NVIDIA's driver and CUDA 13 libraries (cuBLASLt, cuDNN 9, NVRTC) on the library path, "
                  "or use --backend cpu");
#endif
}

}  // namespace kiln
