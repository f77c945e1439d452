// kiln inspect MODEL [--json]: what a model takes, gives and contains, without running it.
#include "artifact.h"
#include "commands.h"

#include <kiln/error.h>
#include <kiln/onnx_importer.h>

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <map>
#include <memory>

namespace kiln::cli {
namespace {

using nlohmann::ordered_json;

struct InspectOptions {
  std::string modelPath;
  bool json = false;
};

// Ops by type, counted through subgraphs too (If/Loop/Scan bodies do real work).
void countOps(const Network& net, std::map<std::string, int64_t>& histogram) {
  for (const Layer& layer : net.layers()) {
    ++histogram[layer.domain.empty() ? layer.opType : layer.domain + "::" + layer.opType];
    for (const auto& [name, attribute] : layer.attributes) {
      if (const auto* graph = attribute.get<Attribute::Graph>()) countOps(**graph, histogram);
      if (const auto* graphs = attribute.get<std::vector<Attribute::Graph>>())
        for (const auto& g : *graphs) countOps(*g, histogram);
    }
  }
}

ordered_json shapeJson(const Shape& shape) {
  if (!shape.hasRank()) return nullptr;
  ordered_json dims = ordered_json::array();
  for (const Dim& d : shape.dims()) {
    if (d.isKnown()) dims.push_back(d.value());
    else if (d.isSymbol()) dims.push_back(d.symbolName());
    else dims.push_back(nullptr);
  }
  return dims;
}

ordered_json tensorsJson(const Network& net, const std::vector<std::string>& names) {
  ordered_json list = ordered_json::array();
  for (const auto& name : names) {
    const Tensor& t = net.tensor(name);
    ordered_json entry = {{"name", name}};
    entry["dtype"] = t.dtype == DataType::kUndefined ? ordered_json(nullptr) : ordered_json(toString(t.dtype));
    entry["shape"] = shapeJson(t.shape);
    entry["kind"] = toString(t.kind);
    list.push_back(entry);
  }
  return list;
}

std::string domainLabel(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

ordered_json inspectJson(const InspectOptions& options, const Network& net, const std::map<std::string, int64_t>& ops) {
  const ModelInfo& info = net.info();
  ordered_json j;
  j["model"] = options.modelPath;
  j["producer"] = {{"name", info.producerName}, {"version", info.producerVersion}};
  j["ir_version"] = info.irVersion;
  j["model_version"] = info.modelVersion;
  j["graph_name"] = info.graphName;
  j["opset_imports"] = ordered_json::object();
  for (const auto& [domain, version] : info.opsetImports) j["opset_imports"][domainLabel(domain)] = version;
  j["inputs"] = tensorsJson(net, net.runtimeInputs());
  j["outputs"] = tensorsJson(net, net.outputs());
  j["layer_count"] = net.layers().size();
  j["op_histogram"] = ops;
  j["parameters"] = {{"count", net.parameterCount()}, {"bytes", net.parameterBytes()}};
  j["metadata"] = info.metadata;
  j["warnings"] = info.importWarnings;
  return j;
}

void printTensors(const char* title, const Network& net, const std::vector<std::string>& names) {
  std::cout << title << " (" << names.size() << "):\n";
  for (const auto& name : names) {
    const Tensor& t = net.tensor(name);
    std::cout << "  " << name << "  " << (t.dtype == DataType::kUndefined ? "?" : toString(t.dtype)) << "  "
              << t.shape.toString();
    if (t.kind != ValueKind::kTensor) std::cout << "  (" << toString(t.kind) << ")";
    std::cout << "\n";
  }
}

void inspectText(const InspectOptions& options, const Network& net, const std::map<std::string, int64_t>& ops) {
  const ModelInfo& info = net.info();
  std::cout << "model: " << options.modelPath << "\n";
  std::cout << "producer: " << (info.producerName.empty() ? "(none)" : info.producerName)
            << (info.producerVersion.empty() ? "" : " " + info.producerVersion) << "\n";
  std::cout << "ir version: " << info.irVersion << "\n";
  std::string opsets;
  for (const auto& [domain, version] : info.opsetImports)
    opsets += (opsets.empty() ? "" : ", ") + domainLabel(domain) + " " + std::to_string(version);
  std::cout << "opset imports: " << opsets << "\n";
  printTensors("inputs", net, net.runtimeInputs());
  printTensors("outputs", net, net.outputs());
  std::cout << "layers: " << net.layers().size() << "\nop histogram:\n";
  for (const auto& [op, count] : ops) std::cout << "  " << std::left << std::setw(24) << op << " " << count << "\n";
  std::cout << "parameters: " << net.parameterCount() << " (" << net.parameterBytes() << " bytes)\n";
  for (const auto& warning : info.importWarnings) std::cout << "warning: " << warning << "\n";
}

void runInspect(const InspectOptions& options) {
  if (isPlanFile(options.modelPath)) {
    inspectPlan(options.modelPath, options.json);
    return;
  }
  // Lenient: a model with ops Kiln cannot run is still worth inspecting; they become warnings.
  OnnxImportOptions importOptions;
  importOptions.allowUnsupportedOps = true;
  std::shared_ptr<Network> net = OnnxImporter(importOptions).importFile(options.modelPath);
  std::map<std::string, int64_t> ops;
  countOps(*net, ops);
  if (options.json) std::cout << inspectJson(options, *net, ops).dump(2) << "\n";
  else inspectText(options, *net, ops);
}

}  // namespace

Command addInspectCommand(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand(
      "inspect", "Show a model's inputs, outputs, opsets, producer, ops and parameters, or a plan's layers");
  sub->add_option("MODEL", options->modelPath, "ONNX model file (.onnx) or plan")->required();
  sub->add_flag("--json", options->json, "Print one JSON object instead of text");
  return {sub, [options] { runInspect(*options); }};
}

}  // namespace kiln::cli
