#include "backend_registry.h"

#include <kiln/error.h>

#include "cuda_loader.h"
#include "test_device/test_device_backend.h"

namespace kiln {

BackendRegistry::BackendRegistry() {
  factories_.add("cpu", [] { return std::shared_ptr<const Backend>(makeCpuBackend()); });
  factories_.add("cpu-device", [] { return std::shared_ptr<const Backend>(makeTestDeviceBackend()); });
  factories_.add("cuda", loadCudaBackend);
}

BackendRegistry& BackendRegistry::instance() {
  // Never destroyed: the backends it made hold library handles (cuBLASLt's, cuDNN's) whose
  // libraries tear their own state down in exit handlers registered after this registry was made,
  // so destroying the backends at exit freed memory twice (cublasLtDestroy aborting in free() from
  // ~BackendRegistry, seen on the H200 in 1 of about 12 runs). The process's end reclaims it all.
  static BackendRegistry* const registry = new BackendRegistry;
  return *registry;
}

std::shared_ptr<const Backend> BackendRegistry::get(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (const auto* made = made_.find(name)) return *made;
  const Factory* factory = factories_.find(name);
  if (!factory) {
    std::string known;
    for (const auto& key : factories_.keys()) known += (known.empty() ? "" : ", ") + key;
    throw Error(ErrorCode::kUnsupported, "there is no backend '" + name + "' (Kiln has " + known + ")");
  }
  std::shared_ptr<const Backend> backend = (*factory)();
  made_.add(name, backend);
  return backend;
}

std::vector<std::string> BackendRegistry::names() const {
  std::lock_guard lock(mutex_);
  return factories_.keys();
}

void BackendRegistry::add(const std::string& name, Factory factory) {
  std::lock_guard lock(mutex_);
  factories_.add(name, std::move(factory));
}

}  // namespace kiln
