#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/runtime.h>

#include "../plan/engine_plan.h"
#include "../plan/plan_format.h"
#include "engine_program.h"

#include <nlohmann/json.hpp>

namespace kiln {

Engine::Engine(std::shared_ptr<const EnginePlan> plan) : plan_(std::move(plan)), program_(buildProgram(*plan_)) {}
Engine::~Engine() = default;

const PlanInfo& Engine::planInfo() const { return plan_->info; }
const BuildReport& Engine::report() const { return plan_->report; }
const std::vector<OptimizationProfile>& Engine::profiles() const { return plan_->profiles; }

std::vector<IOTensorInfo> Engine::ioTensors() const {
  std::vector<IOTensorInfo> out;
  const Network& net = *plan_->network;
  for (const auto& name : net.runtimeInputs()) out.push_back({name, true, net.tensor(name).dtype, net.tensor(name).shape});
  for (const auto& name : net.outputs()) out.push_back({name, false, net.tensor(name).dtype, net.tensor(name).shape});
  return out;
}

std::unique_ptr<ExecutionContext> Engine::createExecutionContext() const {
  return std::make_unique<ExecutionContext>(plan_, program_);
}

std::string Engine::tensorMemorySpace(const std::string& name) const {
  const SlotInfo& info = program_->slots[size_t(program_->slot(name))];
  return toString(info.constant ? MemorySpace::kHost : info.place.space);
}

std::string Engine::inspectJson() const {
  using nlohmann::json;
  const EnginePlan& d = *plan_;
  json j = json::parse(d.report.toJson());
  j["plan"] = {{"format_version", d.info.formatVersion}, {"kiln_version", d.info.kilnVersion},
               {"backend", d.info.backend},            {"device", d.info.deviceName},
               {"compute_capability", d.info.computeCapability}, {"build_flags", d.info.buildFlags}};
  if (d.info.worldSize > 1) j["plan"]["tensor_parallel"] = {{"world_size", d.info.worldSize}, {"rank", d.info.rank}};
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
                  {"dtype", std::string(toString(t.dtype))}, {"shape", t.shape.toString()},
                  {"memory_space", tensorMemorySpace(t.name)}});
  j["io"] = io;
  json tensors = json::object();
  for (const auto& [name, t] : d.tensors)
    tensors[name] = {{"storage", std::string(toString(t.storage))}, {"format", toString(t.format)},
                     {"memory_space", toString(t.space)}, {"model_tensor", t.modelTensor}, {"converted", t.converted}};
  j["tensors"] = tensors;
  json inserted = json::array();
  for (size_t i = 0; i < d.layers.size(); ++i)
    if (d.layers[i].role != LayerRole::kCompute) {
      const Layer& l = d.network->layers()[i];
      inserted.push_back({{"name", l.name}, {"role", toString(d.layers[i].role)}, {"backend", d.layers[i].backend},
                          {"input", l.inputs.at(0)}, {"output", l.outputs.at(0)}});
    }
  j["inserted_layers"] = inserted;
  j["non_linear_layouts"] = nonLinearTensorLayouts();
  json arenas = json::array();
  for (const auto& m : d.memory) arenas.push_back({{"memory_space", toString(m.space)}, {"bytes", m.arenaBytes}});
  j["arenas"] = arenas;
  return j.dump(2);
}

std::map<std::string, std::string> Engine::nonLinearTensorLayouts() const {
  std::map<std::string, std::string> layouts;
  for (const auto& [name, t] : plan_->tensors)
    if (t.format != TensorFormat::kLinear) layouts[name] = toString(t.format);
  return layouts;
}

std::shared_ptr<Engine> Runtime::load(const std::vector<uint8_t>& plan) const {
  std::shared_ptr<EnginePlan> d = readPlan(plan);
  auto engine = std::make_shared<Engine>(std::move(d));  // instantiates every step: unknown tactics are refused
  logger_.log(Severity::kInfo, "loaded a " + engine->planInfo().backend + " plan with " +
                                   std::to_string(engine->plan().network->layers().size()) + " layers");
  return engine;
}

std::shared_ptr<Engine> Runtime::loadFile(const std::string& path) const {
  try {
    return load(readFileBytes(path));
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

}  // namespace kiln
