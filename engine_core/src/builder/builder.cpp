// The build: validate -> passes -> precisions -> tactics -> memory plan -> plan bytes + report.
#include <kiln/builder.h>
#include <kiln/error.h>

#include "../backends/backend.h"
#include "../backends/backend_registry.h"
#include "../ops/collective.h"
#include "../ops/weight_only.h"
#include "../passes/pass.h"
#include "../plan/plan_format.h"
#include "../runtime/precision_convert.h"
#include "conversion_layers.h"
#include "int4_weights.h"
#include "int8_quantization.h"
#include "layer_constraints.h"
#include "memory_planner.h"
#include "placement.h"
#include "precision_planner.h"
#include "profile_validation.h"
#include "shape_values.h"
#include "tactic_lock.h"
#include "tactic_selector.h"

#include <chrono>
#include <set>

namespace kiln {
namespace {

// Forwards progress to the observer and stops the build with kCancelled when it asks. Tactic
// timing reports every run: the observer hears each new phase, layer, tactic and fraction, and
// repeats at most every kRepeatInterval, but is asked whether to cancel every time.
class Progress {
 public:
  explicit Progress(BuildObserver* observer) : observer_(observer) {}
  void report(const std::string& phase, double fraction, const std::string& layer = "", const std::string& tactic = "") {
    if (!observer_) return;
    const auto now = std::chrono::steady_clock::now();
    const bool newStep = phase != last_.phase || layer != last_.layer;
    if (newStep) seenTactics_.clear();
    const bool newTactic = !tactic.empty() && seenTactics_.insert(tactic).second;
    const bool repeat = tactic != last_.tactic && now - lastSent_ >= kRepeatInterval;
    if (newStep || newTactic || fraction != last_.fraction || repeat) {
      last_ = {phase, layer, tactic, fraction};
      lastSent_ = now;
      observer_->progress(last_);
    }
    if (observer_->cancelled())
      throw Error(ErrorCode::kCancelled, "the build was cancelled during " + phase +
                                             (layer.empty() ? std::string() : " at layer '" + layer + "'"));
  }

 private:
  static constexpr std::chrono::milliseconds kRepeatInterval{100};
  BuildObserver* observer_;
  BuildProgress last_;
  std::set<std::string> seenTactics_;  // of the current layer
  std::chrono::steady_clock::time_point lastSent_;
};

std::string buildFlags(const BuilderConfig& c) {
  std::string s = std::string("storage=") + toString(c.storagePrecision()) + " opt-level=" +
                  std::to_string(c.optimizationLevel);
  if (c.allowTF32) s += " tf32";
  if (c.allowINT8) s += " int8";
  if (c.allowFP8) s += " fp8";
  if (c.allowFP4) s += " fp4";
  if (c.strongTyping) s += " strongly-typed";
  if (c.int4Weights) s += " int4-weights:" + std::to_string(c.int4GroupSize);
  return s;
}

// Weights read only by reduced-precision layers are stored in that precision in the plan (the CPU
// backend widens them again when it prepares its steps). A weight that float32 readers share with
// reduced-precision ones stays wide for them and gets a narrowed copy for the others: device steps
// read exactly their storage type, weights included. Weights that shape inference reads as values
// (Resize's scales, Range's delta) keep their float32 values, which decide output dims.
void narrowWeights(Network& network, const std::vector<PlannedLayer>& layers) {
  struct Reader {
    size_t layer, input;
  };
  std::map<std::string, std::map<DataType, std::vector<Reader>>> readers;  // constant -> wanted type -> readers
  for (size_t i = 0; i < network.layers().size(); ++i) {
    const auto& inputs = network.layers()[i].inputs;
    std::vector<bool> valuesRead;
    bool inferred = false;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Tensor* t = inputs[k].empty() ? nullptr : network.findTensor(inputs[k]);
      if (!t || !t->isConstant() || t->dtype != DataType::kFloat32) continue;
      DataType want = layers[i].phase == LayerPhase::kShape ? DataType::kFloat32 : storageTypeOf(layers[i].precision);
      if (want != DataType::kFloat32 && !inferred) {
        network.inferLayer(i, {}, &valuesRead);  // the network is typed: this only asks what it reads
        inferred = true;
      }
      if (k < valuesRead.size() && valuesRead[k]) want = DataType::kFloat32;
      // int4 scales stay fp32 (kernels/cpu/quant/int4_weight_format.h): the rule's one rounding.
      if (k == weight_only::kScalesInput && weight_only::isWeightOnlyLayer(network.layers()[i])) want = DataType::kFloat32;
      readers[inputs[k]][want].push_back({i, k});
    }
  }
  for (const auto& [name, byType] : readers) {
    const bool shared = byType.count(DataType::kFloat32) != 0;
    for (const auto& [type, list] : byType) {
      if (type == DataType::kFloat32) continue;
      Tensor narrowed = network.tensor(name);
      narrowed.constant = narrowInPlace(narrowed.constant->clone(), type);
      if (!shared) {
        network.tensor(name) = std::move(narrowed);
        continue;
      }
      std::string copy = name + ":" + std::string(toString(type));
      for (int n = 2; network.findTensor(copy); ++n) copy = name + ":" + std::string(toString(type)) + "." + std::to_string(n);
      narrowed.name = copy;
      network.addTensor(copy) = std::move(narrowed);
      for (const Reader& r : list) network.layers()[r.layer].inputs[r.input] = copy;
    }
  }
}

TensorSummary summarize(const Network& net, const EnginePlan& plan, const std::string& name) {
  const Tensor* t = name.empty() ? nullptr : net.findTensor(name);
  if (!t) return {name, "", "", "host", "linear"};
  auto placed = plan.tensors.find(name);
  if (placed == plan.tensors.end())  // a constant
    return {name, std::string(toString(t->constant ? t->constant->dtype() : t->dtype)), t->shape.toString(), "host",
            "linear"};
  return {name, std::string(toString(placed->second.storage)), t->shape.toString(), toString(placed->second.space),
          toString(placed->second.format)};
}

// The graph's input dims at each profile's `point` (one entry without profiles: the static dims).
std::vector<std::map<std::string, std::vector<int64_t>>> profilePoints(const Network& network,
                                                                       const BuilderConfig& config, ProfilePoint point) {
  std::vector<std::map<std::string, std::vector<int64_t>>> points;
  for (size_t p = 0; p < std::max<size_t>(1, config.profiles.size()); ++p)
    points.push_back(profileShapes(network, config, p, point));
  return points;
}

// The activations a backend keeps in a non-linear layout among the layers it runs.
void chooseFormats(const Network& network, const Backend& backend, std::vector<PlannedLayer>& layers) {
  std::vector<std::string> tactics;
  std::vector<Precision> precisions;
  for (const PlannedLayer& p : layers) {
    const bool here = p.backend == backend.name() && p.phase == LayerPhase::kLaunch;
    tactics.push_back(here ? p.tactic : std::string());
    precisions.push_back(p.precision);
  }
  const auto formats = backend.tensorFormats(network, tactics, precisions);
  if (formats.empty()) return;
  auto formatOf = [&](const std::string& tensor) {
    auto it = formats.find(tensor);
    return it == formats.end() ? TensorFormat::kLinear : it->second;
  };
  for (size_t i = 0; i < layers.size(); ++i) {
    if (tactics[i].empty()) continue;
    const Layer& layer = network.layers()[i];
    layers[i].inputFormats.clear();
    for (const auto& in : layer.inputs) layers[i].inputFormats.push_back(formatOf(in));
    if (!layer.outputs.empty()) layers[i].outputFormat = formatOf(layer.outputs[0]);
  }
}

void checkTensorParallelOptions(const BuilderConfig& c) {
  const int n = c.tensorParallelSize;
  if (n < 1 || c.tensorParallelRank < 0 || c.tensorParallelRank >= n)
    throw Error(ErrorCode::kInvalidArgument, "tensor-parallel rank " + std::to_string(c.tensorParallelRank) + " of " +
                                                 std::to_string(n) +
                                                 " ranks: the size must be 1 or more and the rank "
                                                 "between 0 and size - 1");
  // Calibration runs the network on one CPU engine, which a split network's AllReduce layers stop.
  if (n > 1 && (c.allowINT8 || c.allowFP8 || c.allowFP4))
    throw Error(ErrorCode::kUnsupported,
                "tensor-parallel builds do not calibrate INT8 / FP8 / FP4 yet; build them in fp32 / fp16 / bf16 "
                "(int4 weights work)");
}

}  // namespace

std::string backendUnavailableReason(BackendKind backend) {
  try {
    BackendRegistry::instance().get(toString(backend));
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

BuildResult Builder::build(const Network& input, const BuilderConfig& config, BuildObserver* observer) const {
  auto start = std::chrono::steady_clock::now();
  Progress progress(observer);
  const auto engineBackend = BackendRegistry::instance().get(toString(config.backend));
  const auto cpuBackend = BackendRegistry::instance().get(toString(BackendKind::kCpu));
  const PlacementBackends backends{*engineBackend, *cpuBackend};
  if (config.optimizationLevel < 0 || config.optimizationLevel > 5)
    throw Error(ErrorCode::kInvalidArgument, "optimization level " + std::to_string(config.optimizationLevel) +
                                                 " is outside 0-5");
  checkInt4Options(config);
  checkTensorParallelOptions(config);
  auto network = std::make_shared<Network>(input);
  network->validate();
  network->inferShapes();
  collective::checkWorldSizes(*network);
  validateProfiles(*network, config);

  BuildReport report;
  report.backend = engineBackend->name();
  report.onnxNodeCount = int64_t(input.layers().size());
  progress.report("passes", 0.0);
  PassContext passContext;
  passContext.backend = config.backend;
  passContext.optimizationLevel = config.optimizationLevel;
  passContext.halfPrecision = config.allowFP16 || config.allowBF16;
  passContext.backendSupports = [&](const Layer& l) { return engineBackend->supports(l, Precision::kFP32).supported; };
  if (config.tensorParallelSize > 1) {  // on the exporter's graph, before fusions change it
    for (PassRecord& pass : PassManager::tensorParallelSplit(config.tensorParallelSize, config.tensorParallelRank)
                                .run(*network, passContext))
      report.passes.push_back(std::move(pass));
    collective::checkWorldSizes(*network);
  }
  // layer -> why it stays float (not int8, not int4)
  std::map<std::string, std::string> keptFloat = lowerMatMulNBits(*network, config, *engineBackend, report);
  for (PassRecord& pass : PassManager::standard(config.optimizationLevel).run(*network, passContext))
    report.passes.push_back(std::move(pass));
  for (const auto& pass : report.passes)
    logger_.log(Severity::kInfo, "pass " + pass.name + ": " + std::to_string(pass.layersBefore) + " -> " +
                                     std::to_string(pass.layersAfter) + " layers");
  network->sortLayersTopologically();
  checkLayerConstraintNames(input, *network, config);
  TimingCache cache(config.timingCachePath);
  const TacticSearch search = TacticSearch::forLevel(config.optimizationLevel);
  if (isExplicitlyQuantized(input)) {  // the model states its quantization (TensorRT's explicit mode)
    keptFloat.merge(fuseExplicitQuantization(input, *network, config, *engineBackend, report));
    if (quantizesLayers(config))
      report.warnings.push_back("the model is explicitly quantized (QuantizeLinear/DequantizeLinear): its own "
                                "scales are used, calibration is skipped");
  } else if (quantizesLayers(config)) {
    progress.report("calibration", 0.05);
    keptFloat.merge(quantizeForInt8(
        input, *network, config, *engineBackend,
        [&](double fraction, const std::string& detail) {
          progress.report("calibration", 0.05 + 0.25 * fraction, detail);
        },
        report,
        {*engineBackend, cache, search, floatPrecisionOf(config, engineBackend->kind() == BackendKind::kCpu),
         [&](const std::string& layer, const std::string& tactic) {
           progress.report("precision timing", 0.3, layer, tactic);
         }}));
  }
  for (auto& [layer, why] : quantizeWeightsToInt4(*network, config, *engineBackend, report))
    keptFloat[layer] += (keptFloat[layer].empty() ? "" : "; ") + why;

  progress.report("precision", 0.3);
  EnginePlan plan;
  plan.layers.resize(network->layers().size());
  const auto precisions = planPrecisions(*network, config, *engineBackend, *cpuBackend, report.warnings);
  for (size_t i = 0; i < precisions.size(); ++i) plan.layers[i].precision = precisions[i];
  const ShapeValuePlan shapeValues = analyzeShapeValues(*network, profilePoints(*network, config, ProfilePoint::kMax));
  placeLayers(*network, shapeValues, *engineBackend, config.strictDevice, plan.layers, report.warnings);
  giveQuantizedLayersFloatStorage(*network, config,
                                  [&](size_t i) -> const Backend& { return backends.named(plan.layers[i].backend); });
  for (const auto& w : report.warnings) logger_.log(Severity::kWarning, w);
  for (size_t i = 0; i < network->layers().size(); ++i) {
    const Layer& l = network->layers()[i];
    const Backend& backend = backends.named(plan.layers[i].backend);
    if (!backend.supports(l, Precision::kFP32).supported)
      throw Error(ErrorCode::kUnsupported, l.describe() + " cannot run on the " + backend.name() + " backend: " +
                                               backend.supports(l, Precision::kFP32).why);
  }

  auto optShapes = concreteShapes(*network, profileShapes(*network, config, 0, ProfilePoint::kOpt));
  auto maxShapes = concreteShapes(*network, profileShapes(*network, config, 0, ProfilePoint::kMax));
  TacticSelector engineSelector(*engineBackend, cache, config.workspaceBytes, config.disabledTacticSources, search);
  TacticSelector cpuSelector(*cpuBackend, cache, config.workspaceBytes, config.disabledTacticSources, search);
  std::string tuningLayer;  // the layer being tuned and its progress, for the timing listener
  double tuningFraction = 0;
  const TimingListener listener = [&](const std::string& tactic) {
    progress.report("tactics", tuningFraction, tuningLayer, tactic);
  };
  engineSelector.setListener(listener);
  cpuSelector.setListener(listener);
  const DeviceInfo lockDevice = engineBackend->device();
  TacticLock lock(config.tacticLockPath, engineBackend->name(), lockDevice.name + " " + lockDevice.computeCapability);
  std::vector<TacticChoice> choices(network->layers().size());
  int64_t skippedTactics = 0, largestSkipped = 0;
  // 4-D outputs of layers on channels-last tactics: their readers will likely get them NHWC.
  std::set<std::string> likelyChannelsLast;
  for (size_t i = 0; i < network->layers().size(); ++i) {
    const Layer& l = network->layers()[i];
    PlannedLayer& planned = plan.layers[i];
    tuningLayer = l.name;
    tuningFraction = 0.35 + 0.45 * double(i) / double(std::max<size_t>(1, network->layers().size()));
    progress.report("tactics", tuningFraction, l.name);
    if (planned.phase == LayerPhase::kShape) {  // runs on the host's reference kernel before enqueue
      planned.tactic = cpuBackend->tactics(l, Precision::kFP32, describeInputs(*network, l, maxShapes)).at(0).id;
      choices[i].tactic = planned.tactic;
      continue;
    }
    std::vector<TensorFormat> likelyInputs;
    for (const auto& in : l.inputs)
      likelyInputs.push_back(likelyChannelsLast.count(in) ? TensorFormat::kNHWC : TensorFormat::kLinear);
    TacticSelector& selector = planned.backend == engineBackend->name() ? engineSelector : cpuSelector;
    auto forced = config.forcedTactics.find(l.name);
    std::string forcedTactic = forced == config.forcedTactics.end() ? std::string() : forced->second;
    const std::optional<LockedTactic> locked = lock.find(l.name);
    if (lock.replaying() && !locked)
      throw Error(ErrorCode::kInvalidArgument, l.describe() + " is not in the tactic lock '" + config.tacticLockPath +
                                                   "' (made for another model, options or Kiln); delete it to write a new one");
    if (locked) forcedTactic = locked->tactic;
    choices[i] = selector.select(*network, l, planned.precision, optShapes, maxShapes, likelyInputs, forcedTactic);
    if (locked) choices[i].payload = locked->payload;
    lock.record(l.name, {choices[i].tactic, choices[i].payload});
    planned.tactic = choices[i].tactic;
    planned.tacticPayload = choices[i].payload;
    planned.workspaceBytes = choices[i].workspaceBytes;
    if (choices[i].takesChannelsLast && !l.outputs.empty()) {
      auto dims = optShapes.find(l.outputs[0]);
      if (dims != optShapes.end() && dims->second.size() == 4) likelyChannelsLast.insert(l.outputs[0]);
    }
    for (const auto& c : choices[i].candidates)
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

  progress.report("placement", 0.82);
  chooseFormats(*network, *engineBackend, plan.layers);
  if (engineBackend.get() != cpuBackend.get()) chooseFormats(*network, *cpuBackend, plan.layers);
  std::map<std::string, TacticChoice> choiceOf;  // by layer name: conversion layers are inserted next
  for (size_t i = 0; i < network->layers().size(); ++i) choiceOf[network->layers()[i].name] = std::move(choices[i]);
  placeTensorsAndConvert(*network, plan.layers, plan.tensors, shapeValues, backends);
  network->inferShapes();

  progress.report("memory", 0.85);
  std::map<std::string, uint64_t> tensorBytes;  // the largest over every profile
  for (const auto& point : profilePoints(*network, config, ProfilePoint::kMax))
    for (const auto& [name, dims] : concreteShapes(*network, point)) {
      auto placed = plan.tensors.find(name);
      if (placed == plan.tensors.end() || byteSize(placed->second.storage) == 0) continue;
      uint64_t& bytes = tensorBytes[name];
      bytes = std::max(bytes, uint64_t(elementCount(dims)) * byteSize(placed->second.storage));
    }
  plan.memory = planMemory(*network, plan.layers, plan.tensors, tensorBytes);
  for (const MemoryPlan& m : plan.memory) {
    report.peakActivationBytes += int64_t(m.arenaBytes);
    report.naiveActivationBytes += int64_t(m.naiveBytes);
  }

  narrowWeights(*network, plan.layers);
  report.weightBytes = network->parameterBytes();
  bool deviceSeen = false;
  for (size_t i = 0; i < network->layers().size(); ++i) {
    const Layer& l = network->layers()[i];
    const PlannedLayer& p = plan.layers[i];
    LayerSummary s;
    s.name = l.name;
    s.type = (l.domain.empty() ? "" : l.domain + ".") + l.opType;
    s.precision = toString(p.precision);
    s.tactic = p.tactic;
    if (auto c = choiceOf.find(l.name); c != choiceOf.end() && p.role == LayerRole::kCompute) {
      s.tacticCandidates = c->second.candidates;
      s.workspaceBytes = int64_t(c->second.workspaceBytes);
    }
    for (const auto& in : l.inputs) s.inputs.push_back(summarize(*network, plan, in));
    for (const auto& out : l.outputs) s.outputs.push_back(summarize(*network, plan, out));
    s.origins = p.role == LayerRole::kCompute ? l.origins : std::vector<std::string>{};
    s.backend = p.backend;
    s.role = toString(p.role);
    s.phase = toString(p.phase);
    s.fallback = p.fallbackReason;
    if (auto kept = keptFloat.find(l.name); kept != keptFloat.end() && p.role == LayerRole::kCompute)
      s.precisionReason = kept->second;
    s.dataDependent = p.dataDependentShape;
    report.layers.push_back(std::move(s));
    // A device engine waits for its stream before a host layer that follows device work, and at
    // each collective on the device (the communicator waits for its peers with a deadline).
    const bool onDevice = backends.named(p.backend).memorySpace() == MemorySpace::kDevice;
    const bool hostAfterDevice = p.phase == LayerPhase::kLaunch && !onDevice && deviceSeen;
    const bool deviceCollective = onDevice && collective::isCollective(l);
    if (onDevice) deviceSeen = true;
    if (!p.dataDependentShape.empty() || hostAfterDevice || deviceCollective)
      report.synchronizingLayers.push_back(l.name);
  }
  if (!report.synchronizingLayers.empty())
    report.warnings.push_back("the engine synchronises at " + std::to_string(report.synchronizingLayers.size()) +
                              " layer(s) (data-dependent shapes, host layers after device ones, or collectives "
                              "waiting for the other ranks), so it cannot be captured in a CUDA graph");
  if (!report.synchronizingLayers.empty()) logger_.log(Severity::kWarning, report.warnings.back());

  progress.report("serialize", 0.95);
  DeviceInfo device = engineBackend->device();
  plan.info = {kPlanFormatVersion, KILN_VERSION, report.backend, device.name, device.computeCapability,
               buildFlags(config)};
  plan.info.worldSize = config.tensorParallelSize;
  plan.info.rank = config.tensorParallelRank;
  plan.network = network;
  plan.profiles = config.profiles;
  report.buildMilliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  plan.report = report;
  // A replayed tactic lock times nothing; without the build's duration its plan is the same bytes
  // every time.
  if (lock.replaying()) {
    plan.report.buildMilliseconds = 0;
    for (PassRecord& pass : plan.report.passes) pass.milliseconds = 0;
  }
  BuildResult result{writePlan(plan), std::move(report)};
  progress.report("done", 1.0);  // the last chance to cancel: nothing is written before it
  cache.save();
  lock.save();
  calibration::writeCalibrationCache(input, result.report.calibration);
  return result;
}

}  // namespace kiln
