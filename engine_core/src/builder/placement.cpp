#include "placement.h"

#include <kiln/error.h>

#include "../ops/fused.h"
#include "../runtime/subgraph_cache.h"

namespace kiln {
namespace {

bool hostOnly(const Tensor* t) { return t && (t->kind != ValueKind::kTensor || t->dtype == DataType::kString); }

std::string nameSome(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 5; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 5) s += " and " + std::to_string(names.size() - 5) + " more";
  return s;
}

}  // namespace

bool usesHostOnlyValues(const Network& network, const Layer& layer) {
  // kiln.Pointwise's body describes its elementwise work (a device backend may run it); control
  // flow bodies run on the host.
  const bool pointwise = layer.domain == fused::kDomain && layer.opType == fused::kPointwise;
  if (hasSubgraphs(layer) && !pointwise) return true;
  for (const auto& name : layer.inputs)
    if (!name.empty() && hostOnly(network.findTensor(name))) return true;
  for (const auto& name : layer.outputs)
    if (!name.empty() && hostOnly(network.findTensor(name))) return true;
  return false;
}

void placeLayers(const Network& network, const ShapeValuePlan& shapes, const Backend& engineBackend,
                 bool strictDevice, std::vector<PlannedLayer>& layers, std::vector<std::string>& warnings) {
  const auto& net = network.layers();
  const std::string cpu = toString(BackendKind::kCpu);
  std::vector<std::string> fellBack;
  for (size_t i = 0; i < net.size(); ++i) {
    PlannedLayer& planned = layers[i];
    const Layer& layer = net[i];
    planned.dataDependentShape = shapes.dataDependent[i];
    if (shapes.inShapePhase[i]) {
      planned.phase = LayerPhase::kShape;
      planned.backend = cpu;
      planned.precision = Precision::kFP32;  // shape arithmetic keeps its declared types
      continue;
    }
    planned.backend = engineBackend.name();
    if (engineBackend.kind() == BackendKind::kCpu) continue;
    std::string why;
    if (!planned.dataDependentShape.empty() && !engineBackend.runsDataDependent(layer)) why = planned.dataDependentShape;
    else if (usesHostOnlyValues(network, layer)) why = "control flow, sequences and strings run on the CPU";
    else if (auto verdict = engineBackend.supportsTensors(layer, planned.precision, layerSignature(network, layer));
             !verdict.supported)
      why = verdict.why;
    if (why.empty()) continue;
    planned.backend = cpu;
    planned.fallbackReason = why;
    fellBack.push_back("'" + layer.name + "' (" + layer.opType + ": " + why + ")");
  }
  if (fellBack.empty()) return;
  if (strictDevice)
    throw Error(ErrorCode::kUnsupported, "the " + engineBackend.name() + " backend cannot run " +
                                             std::to_string(fellBack.size()) + " layer(s): " + nameSome(fellBack) +
                                             "; build without --strict-device to run them on the CPU");
  warnings.push_back(std::to_string(fellBack.size()) + " layer(s) fall back from the " + engineBackend.name() +
                     " backend to the CPU: " + nameSome(fellBack));
}

}  // namespace kiln
