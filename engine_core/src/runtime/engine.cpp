#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/runtime.h>

#include "../backends/backend.h"
#include "../builder/engine_description.h"
#include "../plan/plan_format.h"
#include "layer_runner.h"
#include "precision_convert.h"

#include <nlohmann/json.hpp>

namespace kiln {

Engine::Engine(std::shared_ptr<const EngineDescription> description) : description_(std::move(description)) {}
Engine::~Engine() = default;

const PlanInfo& Engine::planInfo() const { return description_->info; }
const BuildReport& Engine::report() const { return description_->report; }
const std::vector<OptimizationProfile>& Engine::profiles() const { return description_->profiles; }

std::vector<IOTensorInfo> Engine::ioTensors() const {
  std::vector<IOTensorInfo> out;
  const Network& net = *description_->network;
  for (const auto& name : net.runtimeInputs()) out.push_back({name, true, net.tensor(name).dtype, net.tensor(name).shape});
  for (const auto& name : net.outputs()) out.push_back({name, false, net.tensor(name).dtype, net.tensor(name).shape});
  return out;
}

std::unique_ptr<ExecutionContext> Engine::createExecutionContext() const {
  return std::make_unique<ExecutionContext>(description_);
}

std::string Engine::inspectJson() const {
  using nlohmann::json;
  const auto& d = *description_;
  json j = json::parse(d.report.toJson());
  j["plan"] = {{"format_version", d.info.formatVersion}, {"kiln_version", d.info.kilnVersion},
               {"backend", d.info.backend},            {"device", d.info.deviceName},
               {"compute_capability", d.info.computeCapability}, {"build_flags", d.info.buildFlags}};
  json profiles = json::array();
  for (const auto& p : d.profiles) {
    json pj = json::object();
    for (const auto& [name, r] : p.inputs) pj[name] = {{"min", r.min}, {"opt", r.opt}, {"max", r.max}};
    profiles.push_back(pj);
  }
  j["profiles"] = profiles;
  json io = json::array();
  for (const auto& t : ioTensors())
    io.push_back({{"name", t.name}, {"kind", t.isInput ? "input" : "output"},
                  {"dtype", std::string(toString(t.dtype))}, {"shape", t.shape.toString()}});
  j["io"] = io;
  j["non_linear_layouts"] = nonLinearTensorLayouts();
  return j.dump(2);
}

std::map<std::string, std::string> Engine::nonLinearTensorLayouts() const {
  std::map<std::string, std::string> layouts;
  const auto& layers = description_->network->layers();
  for (size_t i = 0; i < layers.size() && i < description_->steps.size(); ++i) {
    const TensorFormat format = description_->steps[i]->tactic().outputFormat;
    if (format != TensorFormat::kLinear && !layers[i].outputs.empty()) layouts[layers[i].outputs[0]] = toString(format);
  }
  return layouts;
}

std::shared_ptr<Engine> Runtime::load(const std::vector<uint8_t>& plan) const {
  auto d = readPlan(plan);
  if (d->info.backend == "cuda")
    throw Error(ErrorCode::kUnsupported, "the plan was built for the CUDA backend on '" + d->info.deviceName +
                                             "' (compute capability " + d->info.computeCapability +
                                             "); this Kiln runs it only on that device with the CUDA backend");
  if (d->info.backend != "cpu")
    throw Error(ErrorCode::kUnsupported, "the plan names an unknown backend '" + d->info.backend + "'");
  if (d->decisions.size() != d->network->layers().size())
    throw Error(ErrorCode::kInvalidModel, "the plan's layer decisions do not match its layers; rebuild it");
  // Weights stored in a reduced type are widened back to the layer's compute type once, here.
  for (const auto& name : d->network->tensorNames()) {
    Tensor& t = d->network->tensor(name);
    if (t.isConstant() && t.dtype == DataType::kFloat32 && t.constant->dtype() != DataType::kFloat32)
      t.constant = widenToFloat32(*t.constant);
  }
  d->steps = instantiateSteps(*makeCpuBackend(), *d);  // also checks that every tactic exists
  logger_.log(Severity::kInfo, "loaded a " + d->info.backend + " plan with " +
                                   std::to_string(d->network->layers().size()) + " layers");
  return std::make_shared<Engine>(std::move(d));
}

std::shared_ptr<Engine> Runtime::loadFile(const std::string& path) const {
  try {
    return load(readFileBytes(path));
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

}  // namespace kiln
