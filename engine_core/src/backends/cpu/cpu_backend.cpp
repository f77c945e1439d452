// The CPU backend: runs every op of the CPU kernel registry, keeps activations in fp32, fp16 or
// bf16 between layers (computing in fp32 inside a layer). Its INT8 layers are Kiln's quantized ops
// (kiln.QuantizedConv / kiln.QuantizedMatMul, made by the builder's quantization step), and so are
// its FP8 and FP4 layers, which it emulates exactly in float. Ops with several implementations
// offer them as tactics; the others have one, named after the op.
#include "../../ops/quantized.h"
#include "../backend.h"
#include "channels_last.h"
#include "cpu_device.h"
#include "cpu_kernel.h"
#include "cpu_step.h"

#include <kernels/cpu/common/parallel.h>

#include <algorithm>
#include <cctype>

namespace kiln {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// The id of an op's reference kernel as a tactic: "cpu.relu", "cpu.kiln.fusedconv".
std::string referenceTacticId(const Layer& layer) {
  return "cpu." + (layer.domain.empty() ? "" : layer.domain + ".") + lower(layer.opType);
}

class CpuBackend : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  BackendKind kind() const override { return BackendKind::kCpu; }

  DeviceInfo device() const override {
    return {"CPU (x86-64, " + std::to_string(kernels::cpuThreadCount()) + " threads)", ""};
  }

  SupportVerdict supports(const Layer& layer, Precision precision) const override {
    if (!CpuKernelRegistry::instance().find(layer.domain, layer.opType))
      return {false, "no CPU kernel for " + layer.opType};
    if (quantized::isQuantizedPrecision(precision) && !quantized::isQuantizedLayer(layer))
      return {false, "the CPU backend runs " + std::string(toString(precision)) +
                         " only in kiln.QuantizedConv / kiln.QuantizedMatMul layers"};
    return {};
  }

  // Activations are computed in fp32 whatever the storage precision, so the tactics do not depend on it.
  std::vector<Tactic> tactics(const Layer& layer, Precision precision, const LayerInputs& inputs) const override {
    std::vector<Tactic> out;
    for (const CpuTactic& t : CpuKernelRegistry::instance().tactics(layer.domain, layer.opType))
      if (!t.applies || t.applies(layer, inputs))
        out.push_back({t.id, {}, TensorFormat::kLinear, t.workspaceBytes ? t.workspaceBytes(layer, inputs.dims) : 0,
                       t.channelsLast && precision == Precision::kFP32, {}});  // channelsLastTensors: fp32 only
    if (out.empty()) out.push_back({referenceTacticId(layer)});
    return out;
  }

  std::unique_ptr<Step> instantiate(const Layer& layer, const Tactic& tactic,
                                    const LayerSignature& signature) const override {
    if (tactic.id == referenceTacticId(layer)) {
      const CpuKernelFn& kernel = cpuKernelFor(layer);
      return std::make_unique<CpuStep>(layer, tactic, [&](const LayerWeights&) { return kernel; }, nullptr, signature);
    }
    const auto& registry = CpuKernelRegistry::instance();
    const CpuTactic* source = registry.findTactic(layer.domain, layer.opType, tactic.id);
    if (!source) {
      std::string known = referenceTacticId(layer);
      for (const auto& t : registry.tactics(layer.domain, layer.opType)) known += ", " + t.id;
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": the CPU backend has no tactic '" + tactic.id +
                                                   "' (it has " + known +
                                                   "); the plan was made by another Kiln version: rebuild it");
    }
    return std::make_unique<CpuStep>(
        layer, tactic, [&](const LayerWeights& weights) { return source->instantiate(layer, weights, tactic); }, source,
        signature);
  }

  std::unordered_map<std::string, TensorFormat> tensorFormats(const Network& network,
                                                              const std::vector<std::string>& tactics,
                                                              const std::vector<Precision>& precisions) const override {
    return channelsLastTensors(network, tactics, precisions);
  }

  DeviceAllocator& allocator() const override { return cpuAllocator(); }
  std::unique_ptr<Stream> createStream() const override { return makeCpuStream(); }
  std::unique_ptr<Event> createEvent() const override { return makeCpuEvent(); }
};

}  // namespace

std::unique_ptr<Backend> makeCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace kiln
