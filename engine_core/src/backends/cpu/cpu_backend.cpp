// The CPU backend: runs every op of the CPU kernel registry, keeps activations in fp32, fp16 or
// bf16 between layers (computing in fp32 inside a layer), and has no INT8/FP8 kernels yet.
#include "../backend.h"
#include "cpu_kernel.h"

#include <kernels/cpu/common/parallel.h>

#include <algorithm>
#include <cctype>

namespace kiln {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

class CpuBackend : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::kCpu; }

  DeviceInfo device() const override {
    return {"CPU (x86-64, " + std::to_string(kernels::cpuThreadCount()) + " threads)", ""};
  }

  SupportVerdict supports(const Layer& layer, Precision precision) const override {
    if (!CpuKernelRegistry::instance().find(layer.domain, layer.opType))
      return {false, "no CPU kernel for " + layer.opType};
    if (precision == Precision::kINT8 || precision == Precision::kFP8)
      return {false, "the CPU backend has no " + std::string(toString(precision)) + " kernels"};
    return {};
  }

  std::vector<Tactic> tactics(const Layer& layer, Precision precision) const override {
    (void)precision;
    std::vector<Tactic> out;
    for (const auto& id : CpuKernelRegistry::instance().tacticIds(layer.domain, layer.opType)) out.push_back({id});
    if (out.empty()) out.push_back({"cpu." + (layer.domain.empty() ? "" : layer.domain + ".") + lower(layer.opType)});
    return out;
  }
};

}  // namespace

std::unique_ptr<Backend> makeCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace kiln
