#pragma once
// A backend runs engine layers: the CPU backend (reference and fallback) and the CUDA backend.
// The builder asks it what it supports, which candidate implementations (tactics) a layer has,
// and to time them; the runtime asks it to instantiate the chosen tactic as a Step.
#include <kiln/builder_config.h>
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln {

// One candidate implementation of a layer. The id is stable across builds and versions
// ("cpu.conv.im2col_gemm", "cublaslt.gemm.algo17.fp16.relu_bias") so timing caches and plans can
// name it.
struct Tactic {
  std::string id;
  std::string inputFormat = "linear";   // tensor layouts it reads ("linear" = row-major NCHW)
  std::string outputFormat = "linear";
  uint64_t workspaceBytes = 0;
};

struct SupportVerdict {
  bool supported = true;
  std::string why;  // when not supported: the reason, for the build report
};

struct DeviceInfo {
  std::string name;               // "CPU (x86-64, 2 threads)", "NVIDIA H200"
  std::string computeCapability;  // "9.0"; empty on the CPU
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual DeviceInfo device() const = 0;
  // Whether the backend can run `layer` with its activations in `precision`.
  virtual SupportVerdict supports(const Layer& layer, Precision precision) const = 0;
  // Candidate implementations, best guess first (never empty for a supported layer).
  virtual std::vector<Tactic> tactics(const Layer& layer, Precision precision) const = 0;
};

std::unique_ptr<Backend> makeCpuBackend();

}  // namespace kiln
