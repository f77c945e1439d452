#pragma once
// The backends an engine can place layers on, by name: "cpu" (the reference and fallback),
// "cpu-device" (the test device backend: CPU kernels on memory the runtime may not touch) and
// "cuda" (loaded from its own shared library when first asked for, so Kiln starts where there is
// no GPU and no CUDA library). Each backend is made once per process and shared by the builder and
// every engine that uses it.
#include "../common/registry.h"
#include "backend.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {

class BackendRegistry {
 public:
  using Factory = std::function<std::shared_ptr<const Backend>()>;

  static BackendRegistry& instance();
  // The backend named `name`, made on first use. Throws kUnsupported naming it, and why it cannot
  // be had here (no such backend; its library or device is missing), and what to do.
  std::shared_ptr<const Backend> get(const std::string& name);
  std::vector<std::string> names() const;
  void add(const std::string& name, Factory factory);

 private:
  BackendRegistry();
  mutable std::mutex mutex_;
  Registry<Factory> factories_;
  Registry<std::shared_ptr<const Backend>> made_;
};

}  // namespace kiln
