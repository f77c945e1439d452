// kiln inspect PLAN [--json]: what the builder made: plan header, profiles, and per layer its type,
// precision, tactic, shapes and the ONNX nodes it fused (like TensorRT's engine inspector).
#include "commands.h"

#include <kiln/runtime.h>

#include <iomanip>
#include <iostream>

namespace kiln::cli {

void inspectPlan(const std::string& path, bool json) {
  auto engine = Runtime().loadFile(path);
  if (json) {
    std::cout << engine->inspectJson() << "\n";
    return;
  }
  const PlanInfo& info = engine->planInfo();
  const BuildReport& report = engine->report();
  std::cout << "plan: " << path << "\n"
            << "format version " << info.formatVersion << ", built by Kiln " << info.kilnVersion << " for "
            << info.backend << " (" << info.deviceName << ")\n"
            << "build flags: " << info.buildFlags << "\n";
  for (const auto& t : engine->ioTensors())
    std::cout << (t.isInput ? "input  " : "output ") << t.name << "  " << toString(t.dtype) << " " << t.shape.toString()
              << "\n";
  for (size_t p = 0; p < engine->profiles().size(); ++p)
    for (const auto& [name, r] : engine->profiles()[p].inputs)
      std::cout << "profile " << p << ": " << name << " min " << dimsToString(r.min) << " opt " << dimsToString(r.opt)
                << " max " << dimsToString(r.max) << "\n";
  std::cout << report.onnxNodeCount << " ONNX nodes -> " << report.layers.size() << " layers:\n";
  const auto layouts = engine->nonLinearTensorLayouts();
  auto withLayout = [&](const TensorSummary& t) {
    auto it = layouts.find(t.name);
    return it == layouts.end() ? t.shape : t.shape + " " + it->second;
  };
  for (const auto& l : report.layers) {
    std::cout << "  " << std::left << std::setw(32) << l.name << " " << std::setw(20) << l.type << " " << std::setw(5)
              << l.precision << " " << l.tactic << "\n      ";
    for (size_t i = 0; i < l.inputs.size(); ++i) std::cout << (i ? ", " : "") << withLayout(l.inputs[i]);
    std::cout << " -> ";
    for (size_t i = 0; i < l.outputs.size(); ++i) std::cout << (i ? ", " : "") << withLayout(l.outputs[i]);
    if (l.origins.size() > 1 || (l.origins.size() == 1 && l.origins[0] != l.name)) {
      std::cout << "   fused from: ";
      for (size_t i = 0; i < l.origins.size(); ++i) std::cout << (i ? ", " : "") << l.origins[i];
    }
    std::cout << "\n";
  }
  std::cout << "weights " << report.weightBytes << " bytes; activations " << report.peakActivationBytes
            << " bytes peak (" << report.naiveActivationBytes << " without sharing)\n";
  for (const auto& w : report.warnings) std::cout << "warning: " << w << "\n";
}

}  // namespace kiln::cli
