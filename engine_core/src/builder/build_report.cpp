#include <kiln/build_report.h>
#include <kiln/error.h>

#include <nlohmann/json.hpp>

#include <set>

namespace kiln {

using nlohmann::json;

namespace {

json tensorsToJson(const std::vector<TensorSummary>& ts) {
  json out = json::array();
  for (const auto& t : ts)
    out.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"space", t.space}, {"format", t.format}});
  return out;
}

std::vector<TensorSummary> tensorsFromJson(const json& j) {
  std::vector<TensorSummary> out;
  for (const auto& t : j)
    out.push_back({t.at("name"), t.at("dtype"), t.at("shape"), t.value("space", "host"), t.value("format", "linear")});
  return out;
}

json candidatesToJson(const std::vector<TacticCandidate>& cs) {
  json out = json::array();
  for (const auto& c : cs)
    out.push_back({{"tactic", c.tactic}, {"ms", c.milliseconds}, {"status", c.status}, {"workspace_bytes", c.workspaceBytes}});
  return out;
}

// Plans made before candidates were reported have none.
std::vector<TacticCandidate> candidatesFromJson(const json& layer) {
  std::vector<TacticCandidate> out;
  if (layer.contains("tactic_candidates"))
    for (const auto& c : layer.at("tactic_candidates"))
      out.push_back({c.at("tactic"), c.at("ms"), c.at("status"), c.at("workspace_bytes")});
  return out;
}

}  // namespace

QdqTally tallyQdq(const std::vector<QdqNodeSummary>& nodes) {
  QdqTally tally;
  std::set<std::string> layers;
  for (const auto& n : nodes) {
    if (!n.unfused.empty()) ++tally.unfused;
    else if (!n.fusedInto.empty()) ++tally.fused;
    else ++tally.removed;
    layers.insert(n.fusedInto.begin(), n.fusedInto.end());
  }
  tally.int8Layers = int64_t(layers.size());
  return tally;
}

std::string BuildReport::toJson(int indent) const {
  json j;
  j["backend"] = backend;
  j["onnx_node_count"] = onnxNodeCount;
  j["build_ms"] = buildMilliseconds;
  j["memory"] = {{"weight_bytes", weightBytes},
                 {"peak_activation_bytes", peakActivationBytes},
                 {"naive_activation_bytes", naiveActivationBytes}};
  j["warnings"] = warnings;
  json passesJson = json::array();
  for (const auto& p : passes)
    passesJson.push_back({{"name", p.name},
                          {"layers_before", p.layersBefore},
                          {"layers_after", p.layersAfter},
                          {"changes", p.changes},
                          {"ms", p.milliseconds}});
  j["passes"] = passesJson;
  json layersJson = json::array();
  for (const auto& l : layers)
    layersJson.push_back({{"name", l.name},
                          {"type", l.type},
                          {"precision", l.precision},
                          {"tactic", l.tactic},
                          {"tactic_candidates", candidatesToJson(l.tacticCandidates)},
                          {"workspace_bytes", l.workspaceBytes},
                          {"inputs", tensorsToJson(l.inputs)},
                          {"outputs", tensorsToJson(l.outputs)},
                          {"origins", l.origins},
                          {"backend", l.backend},
                          {"role", l.role},
                          {"phase", l.phase},
                          {"fallback", l.fallback},
                          {"precision_reason", l.precisionReason},
                          {"data_dependent", l.dataDependent}});
  j["layers"] = layersJson;
  j["synchronizing_layers"] = synchronizingLayers;
  j["cuda_graph_capturable"] = graphCapturable();
  if (!calibration.calibrator.empty())
    j["calibration"] = {{"calibrator", calibration.calibrator},
                        {"source", calibration.source},
                        {"batches", calibration.batches},
                        {"cache", calibration.cachePath},
                        {"scales", calibration.scales}};
  if (!qdq.empty()) {
    json nodes = json::array();
    for (const auto& n : qdq)
      nodes.push_back({{"node", n.node}, {"op", n.op}, {"fused_into", n.fusedInto}, {"unfused", n.unfused},
                       {"removed", n.removed}});
    j["qdq"] = nodes;
  }
  return j.dump(indent);
}

BuildReport BuildReport::fromJson(const std::string& text) {
  BuildReport r;
  try {
    json j = json::parse(text);
    r.backend = j.at("backend");
    r.onnxNodeCount = j.at("onnx_node_count");
    r.buildMilliseconds = j.at("build_ms");
    r.weightBytes = j.at("memory").at("weight_bytes");
    r.peakActivationBytes = j.at("memory").at("peak_activation_bytes");
    r.naiveActivationBytes = j.at("memory").at("naive_activation_bytes");
    r.warnings = j.at("warnings").get<std::vector<std::string>>();
    for (const auto& p : j.at("passes"))
      r.passes.push_back({p.at("name"), p.at("layers_before"), p.at("layers_after"),
                          p.at("changes").get<std::vector<std::string>>(), p.at("ms")});
    for (const auto& l : j.at("layers"))
      r.layers.push_back({l.at("name"), l.at("type"), l.at("precision"), l.at("tactic"),
                          tensorsFromJson(l.at("inputs")), tensorsFromJson(l.at("outputs")),
                          l.at("origins").get<std::vector<std::string>>(), candidatesFromJson(l),
                          l.value("workspace_bytes", int64_t(0)), l.value("backend", "cpu"),
                          l.value("role", "compute"), l.value("phase", "launch"), l.value("fallback", ""),
                          l.value("precision_reason", ""), l.value("data_dependent", "")});
    r.synchronizingLayers = j.value("synchronizing_layers", std::vector<std::string>{});
    if (j.contains("calibration")) {
      const json& c = j.at("calibration");
      r.calibration = {c.at("calibrator"), c.at("source"), c.at("batches"), c.at("cache"),
                       c.at("scales").get<std::map<std::string, float>>()};
    }
    if (j.contains("qdq"))
      for (const auto& n : j.at("qdq"))
        r.qdq.push_back({n.at("node"), n.at("op"), n.at("fused_into").get<std::vector<std::string>>(),
                         n.at("unfused"), n.at("removed")});
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("malformed build report JSON: ") + e.what());
  }
  return r;
}

}  // namespace kiln
