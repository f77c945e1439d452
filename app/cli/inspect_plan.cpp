// kiln inspect PLAN [--json]: what the builder made: plan header, profiles, and per layer its type,
// precision, backend, tactic, shapes and the ONNX nodes it fused (like TensorRT's engine
// inspector); per tensor its storage type, layout and memory space where they are not the plain
// ones; the Copy/Cast/Reformat layers the builder inserted, CPU fallbacks and sync points; for a
// Q/DQ model, what became of each QuantizeLinear / DequantizeLinear node.
#include "commands.h"

#include <kiln/runtime.h>

#include <iomanip>
#include <iostream>

namespace kiln::cli {

namespace {

// Each Q/DQ node of an explicitly quantized model: the int8 layers it went into, why it stays a
// float layer, or how it went.
void printQdq(const std::vector<QdqNodeSummary>& nodes) {
  const QdqTally t = tallyQdq(nodes);
  std::cout << "explicit quantization: " << nodes.size() << " Q/DQ nodes, " << t.fused << " fused into "
            << t.int8Layers << " int8 layer(s), " << t.removed << " dropped, " << t.unfused << " stay float\n";
  for (const auto& n : nodes) {
    std::cout << "  " << std::left << std::setw(16) << n.op << " " << n.node;
    if (!n.fusedInto.empty()) {
      std::cout << "  fused into ";
      for (size_t i = 0; i < n.fusedInto.size(); ++i) std::cout << (i ? ", " : "") << n.fusedInto[i];
    }
    if (!n.unfused.empty()) std::cout << "  unfused: " << n.unfused;
    if (!n.removed.empty()) std::cout << "  dropped: " << n.removed;
    std::cout << "\n";
  }
}

}  // namespace

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
  if (info.worldSize > 1)
    std::cout << "tensor parallel: rank " << info.rank << " of " << info.worldSize
              << " (run every rank with kiln run/profile --ranks " << info.worldSize << ")\n";
  for (const auto& t : engine->ioTensors())
    std::cout << (t.isInput ? "input  " : "output ") << t.name << "  " << toString(t.dtype) << " " << t.shape.toString()
              << "  (" << engine->tensorMemorySpace(t.name) << " memory)\n";
  for (size_t p = 0; p < engine->profiles().size(); ++p)
    for (const auto& [name, r] : engine->profiles()[p].inputs)
      std::cout << "profile " << p << ": " << name << " min " << dimsToString(r.min) << " opt " << dimsToString(r.opt)
                << " max " << dimsToString(r.max) << "\n";
  std::cout << report.onnxNodeCount << " ONNX nodes -> " << report.layers.size() << " layers:\n";
  // A tensor's shape, then what is not the plain case: "nhwc", "device", a storage type other than
  // float32 ("float16").
  auto describe = [&](const TensorSummary& t) {
    std::string text = t.shape;
    if (t.format != "linear") text += " " + t.format;
    if (t.space != "host") text += " " + t.space;
    if (!t.dtype.empty() && t.dtype != "float32") text += " " + t.dtype;
    return text;
  };
  size_t inserted = 0, fallbacks = 0, shapePhase = 0;
  for (const auto& l : report.layers) {
    std::cout << "  " << std::left << std::setw(32) << l.name << " " << std::setw(20) << l.type << " " << std::setw(5)
              << l.precision << " " << std::setw(10) << l.backend << " " << l.tactic;
    if (l.role != "compute") std::cout << "   (inserted " << l.role << ")";
    if (l.phase == "shape") std::cout << "   (shape phase, on the host)";
    std::cout << "\n      ";
    for (size_t i = 0; i < l.inputs.size(); ++i) std::cout << (i ? ", " : "") << describe(l.inputs[i]);
    std::cout << " -> ";
    for (size_t i = 0; i < l.outputs.size(); ++i) std::cout << (i ? ", " : "") << describe(l.outputs[i]);
    if (l.origins.size() > 1 || (l.origins.size() == 1 && l.origins[0] != l.name)) {
      std::cout << "   fused from: ";
      for (size_t i = 0; i < l.origins.size(); ++i) std::cout << (i ? ", " : "") << l.origins[i];
    }
    std::cout << "\n";
    if (!l.fallback.empty()) std::cout << "      fallback to " << l.backend << ": " << l.fallback << "\n";
    if (!l.precisionReason.empty())  // the int4 step's reasons say "not int4: ..." themselves
      std::cout << "      " << (l.precisionReason.rfind("not int4", 0) == 0 ? "" : "not quantized: ")
                << l.precisionReason << "\n";
    if (!l.dataDependent.empty()) std::cout << "      synchronises: " << l.dataDependent << "\n";
    inserted += l.role != "compute";
    fallbacks += !l.fallback.empty();
    shapePhase += l.phase == "shape";
  }
  std::cout << inserted << " inserted conversion layer(s), " << fallbacks << " CPU fallback(s), " << shapePhase
            << " shape-phase layer(s); " << (report.graphCapturable() ? "capturable in a CUDA graph"
                                                                       : "synchronises inside (no CUDA graph)")
            << "\n";
  std::cout << "weights " << report.weightBytes << " bytes; activations " << report.peakActivationBytes
            << " bytes peak (" << report.naiveActivationBytes << " without sharing)\n";
  if (!report.calibration.calibrator.empty())
    std::cout << "int8 calibration: " << report.calibration.calibrator << ", " << report.calibration.scales.size()
              << " activation scales from "
              << (report.calibration.source == "cache" ? "a calibration cache"
                                                       : std::to_string(report.calibration.batches) + " batch(es)")
              << "\n";
  if (!report.qdq.empty()) printQdq(report.qdq);
  for (const auto& w : report.warnings) std::cout << "warning: " << w << "\n";
}

}  // namespace kiln::cli
