// The build: validate -> passes -> precisions -> tactics -> memory plan -> plan bytes + report.
#include <kiln/builder.h>
#include <kiln/error.h>

#include "../backends/backend.h"
#include "../passes/pass.h"
#include "../plan/plan_format.h"
#include "../runtime/precision_convert.h"
#include "memory_planner.h"
#include "precision_planner.h"
#include "profile_validation.h"
#include "tactic_selector.h"

#include <chrono>
#include <set>

namespace kiln {
namespace {

class Progress {
 public:
  explicit Progress(BuildObserver* observer) : observer_(observer) {}
  void report(const std::string& phase, double fraction, const std::string& layer = "", const std::string& tactic = "") {
    if (!observer_) return;
    observer_->progress({phase, layer, tactic, fraction});
    if (observer_->cancelled()) throw Error(ErrorCode::kCancelled, "the build was cancelled during " + phase);
  }

 private:
  BuildObserver* observer_;
};

std::unique_ptr<Backend> backendFor(const BuilderConfig& config) {
  if (config.backend == BackendKind::kCuda)
    throw Error(ErrorCode::kUnsupported, "this Kiln was built without the CUDA backend; use --backend cpu, or build "
                                         "Kiln on a machine with the CUDA toolkit");
  return makeCpuBackend();
}

// Concrete shapes of every tensor when the inputs take the given shapes (unknown ones omitted).
std::map<std::string, std::vector<int64_t>> concreteShapes(const Network& network,
                                                           const std::map<std::string, std::vector<int64_t>>& inputs) {
  Network copy = network;
  for (const auto& [name, dims] : inputs) copy.tensor(name).shape = Shape::fromDims(dims);
  std::map<std::string, std::vector<int64_t>> shapes;
  try {
    copy.inferShapes();
  } catch (const Error&) {
    return shapes;  // shapes that need run-time data stay unplanned
  }
  for (const auto& name : copy.tensorNames()) {
    const Tensor& t = copy.tensor(name);
    if (t.kind == ValueKind::kTensor && t.shape.isFullyKnown()) shapes[name] = t.shape.knownDims();
  }
  return shapes;
}

std::string buildFlags(const BuilderConfig& c) {
  std::string s = std::string("storage=") + toString(c.storagePrecision()) + " opt-level=" +
                  std::to_string(c.optimizationLevel);
  if (c.allowTF32) s += " tf32";
  if (c.allowINT8) s += " int8";
  if (c.allowFP8) s += " fp8";
  if (c.strongTyping) s += " strongly-typed";
  return s;
}

DataType storageType(Precision p) {
  return p == Precision::kFP16 ? DataType::kFloat16 : p == Precision::kBF16 ? DataType::kBFloat16 : DataType::kFloat32;
}

// Weights read only by reduced-precision layers are stored in that precision in the plan.
void narrowWeights(Network& network, const std::vector<LayerDecision>& decisions) {
  std::map<std::string, DataType> storage;  // constant -> narrowest type all its readers accept
  std::map<std::string, bool> keepWide;
  for (size_t i = 0; i < network.layers().size(); ++i)
    for (const auto& in : network.layers()[i].inputs) {
      const Tensor* t = in.empty() ? nullptr : network.findTensor(in);
      if (!t || !t->isConstant() || t->dtype != DataType::kFloat32) continue;
      DataType want = storageType(decisions[i].precision);
      if (want == DataType::kFloat32) keepWide[in] = true;
      else storage[in] = want;
    }
  for (const auto& [name, type] : storage) {
    if (keepWide.count(name)) continue;
    Tensor& t = network.tensor(name);
    t.constant = narrowInPlace(t.constant->clone(), type);
  }
}

TensorSummary summarize(const Network& net, const std::string& name) {
  const Tensor* t = name.empty() ? nullptr : net.findTensor(name);
  if (!t) return {name, "", ""};
  return {name, std::string(toString(t->dtype)), t->shape.toString()};
}

}  // namespace

BuildResult Builder::build(const Network& input, const BuilderConfig& config, BuildObserver* observer) const {
  auto start = std::chrono::steady_clock::now();
  Progress progress(observer);
  auto backend = backendFor(config);
  if (config.optimizationLevel < 0 || config.optimizationLevel > 5)
    throw Error(ErrorCode::kInvalidArgument, "optimization level " + std::to_string(config.optimizationLevel) +
                                                 " is outside 0-5");
  auto network = std::make_shared<Network>(input);
  network->validate();
  network->inferShapes();
  validateProfiles(*network, config);

  BuildReport report;
  report.backend = toString(config.backend);
  report.onnxNodeCount = int64_t(input.layers().size());
  progress.report("passes", 0.0);
  PassContext passContext;
  passContext.backend = config.backend;
  passContext.optimizationLevel = config.optimizationLevel;
  passContext.backendSupports = [&](const Layer& l) { return backend->supports(l, Precision::kFP32).supported; };
  report.passes = PassManager::standard(config.optimizationLevel).run(*network, passContext);
  for (const auto& pass : report.passes)
    logger_.log(Severity::kInfo, "pass " + pass.name + ": " + std::to_string(pass.layersBefore) + " -> " +
                                     std::to_string(pass.layersAfter) + " layers");

  progress.report("precision", 0.3);
  auto decisions = planPrecisions(*network, config, *backend, report.warnings);
  for (const auto& w : report.warnings) logger_.log(Severity::kWarning, w);
  for (size_t i = 0; i < network->layers().size(); ++i) {
    const Layer& l = network->layers()[i];
    auto verdict = backend->supports(l, decisions[i].precision);
    if (!verdict.supported && backend->supports(l, Precision::kFP32).supported == false)
      throw Error(ErrorCode::kUnsupported, l.describe() + " cannot run on the " + report.backend + " backend: " + verdict.why);
  }

  auto optShapes = concreteShapes(*network, profileShapes(*network, config, 0, ProfilePoint::kOpt));
  auto maxShapes = concreteShapes(*network, profileShapes(*network, config, 0, ProfilePoint::kMax));
  TimingCache cache(config.timingCachePath);
  TacticSelector selector(*backend, cache, config.workspaceBytes);
  std::vector<TacticChoice> choices;
  int64_t skippedTactics = 0, largestSkipped = 0;
  // 4-D outputs of layers on channels-last tactics: their readers will likely get them NHWC.
  std::set<std::string> likelyChannelsLast;
  for (size_t i = 0; i < network->layers().size(); ++i) {
    const Layer& l = network->layers()[i];
    progress.report("tactics", 0.35 + 0.45 * double(i) / double(std::max<size_t>(1, network->layers().size())), l.name);
    std::vector<TensorFormat> likelyInputs;
    for (const auto& input : l.inputs)
      likelyInputs.push_back(likelyChannelsLast.count(input) ? TensorFormat::kNHWC : TensorFormat::kLinear);
    choices.push_back(selector.select(*network, l, decisions[i].precision, optShapes, maxShapes, likelyInputs));
    decisions[i].tactic = choices.back().tactic;
    if (choices.back().takesChannelsLast && decisions[i].precision == Precision::kFP32 && !l.outputs.empty()) {
      auto dims = optShapes.find(l.outputs[0]);
      if (dims != optShapes.end() && dims->second.size() == 4) likelyChannelsLast.insert(l.outputs[0]);
    }
    for (const auto& c : choices.back().candidates)
      if (c.status.rfind("skipped", 0) == 0) {
        ++skippedTactics;
        largestSkipped = std::max(largestSkipped, c.workspaceBytes);
      }
  }
  if (skippedTactics > 0)
    report.warnings.push_back("the workspace limit of " + std::to_string(config.workspaceBytes) + " bytes excluded " +
                              std::to_string(skippedTactics) + " tactic candidates (the largest needs " +
                              std::to_string(largestSkipped) + " bytes; see each layer's tactic_candidates)");
  if (skippedTactics > 0) logger_.log(Severity::kWarning, report.warnings.back());

  progress.report("memory", 0.85);
  std::map<std::string, uint64_t> tensorBytes;
  for (const auto& [name, dims] : maxShapes) {
    DataType dt = network->tensor(name).dtype;
    if (byteSize(dt) > 0) tensorBytes[name] = uint64_t(elementCount(dims)) * byteSize(dt);
  }
  EngineDescription description;
  description.memory = planMemory(*network, network->topologicalOrder(), tensorBytes);
  report.peakActivationBytes = int64_t(description.memory.arenaBytes);
  report.naiveActivationBytes = int64_t(description.memory.naiveBytes);

  narrowWeights(*network, decisions);
  report.weightBytes = network->parameterBytes();
  for (size_t i = 0; i < network->layers().size(); ++i) {
    const Layer& l = network->layers()[i];
    LayerSummary s;
    s.name = l.name;
    s.type = (l.domain.empty() ? "" : l.domain + ".") + l.opType;
    s.precision = toString(decisions[i].precision);
    s.tactic = decisions[i].tactic;
    s.tacticCandidates = choices[i].candidates;
    s.workspaceBytes = int64_t(choices[i].workspaceBytes);
    for (const auto& in : l.inputs) s.inputs.push_back(summarize(*network, in));
    for (const auto& out : l.outputs) s.outputs.push_back(summarize(*network, out));
    s.origins = l.origins;
    report.layers.push_back(std::move(s));
  }

  progress.report("serialize", 0.95);
  DeviceInfo device = backend->device();
  description.info = {kPlanFormatVersion, KILN_VERSION, report.backend, device.name, device.computeCapability,
                      buildFlags(config)};
  description.network = network;
  description.decisions = decisions;
  description.profiles = config.profiles;
  report.buildMilliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  description.report = report;
  BuildResult result{writePlan(description), std::move(report)};
  progress.report("done", 1.0);  // the last chance to cancel: nothing is written before it
  cache.save();
  return result;
}

}  // namespace kiln
