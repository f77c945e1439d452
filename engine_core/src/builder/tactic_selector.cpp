#include "tactic_selector.h"

#include <kiln/error.h>
#include <kiln/random_data.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "../runtime/precision_convert.h"
#include "../runtime/subgraph_cache.h"
#include "conversion_layers.h"

namespace kiln {
namespace {

constexpr int kTimedRuns = 7;
// A timed region is several launches of a short step, at least this long by the probe's measure,
// behind a hold on the stream long enough for the host to enqueue them (Stream::holdBack): the
// events then time the device's work back to back. One launch between events with the host
// enqueueing after the first event timed host overhead too (15-30 µs for a 5 µs kernel at
// batch 1), which an engine replayed as a CUDA graph never pays.
constexpr double kTimedRegionMs = 0.1;
constexpr int kMaxLaunches = 16;
constexpr double kMaxHoldMs = 5.0;
// How much slower than the fastest a channels-last tactic may be and still be chosen.
constexpr double kChannelsLastTieMargin = 0.10;

std::string attributeText(const Attribute& a) {
  const auto& v = a.value();
  if (auto i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto f = std::get_if<float>(&v)) return std::to_string(*f);
  if (auto s = std::get_if<std::string>(&v)) return *s;
  if (auto is = std::get_if<std::vector<int64_t>>(&v)) return dimsToString(*is);
  return std::string(a.typeName());
}

}  // namespace

LayerInputs describeInputs(const Network& network, const Layer& layer, const TensorShapes& shapes) {
  LayerInputs in;
  in.weights = layerSignature(network, layer).weights();
  for (const auto& name : layer.inputs) {
    const Tensor* t = name.empty() ? nullptr : network.findTensor(name);
    in.types.push_back(t ? t->dtype : DataType::kUndefined);
    auto it = shapes.find(name);
    in.dims.push_back(it != shapes.end() ? it->second : std::vector<int64_t>{});
  }
  return in;
}

namespace {

std::string bytesText(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

TacticSearch TacticSearch::forLevel(int optimizationLevel) {
  TacticSearch search;
  search.level = optimizationLevel;
  switch (optimizationLevel) {
    case 0:
    case 1: search.candidateBudget = 1, search.maxCandidates = 1; break;
    case 2: search.candidateBudget = 2, search.maxCandidates = 2; break;
    case 4: search.candidateBudget = 2 * kDefaultCandidateBudget; break;
    case 5: search.candidateBudget = 4 * kDefaultCandidateBudget; break;
    default: break;  // 3: the backends' default breadth, every candidate timed
  }
  return search;
}

std::string TacticSelector::signature(const Network& network, const Layer& layer, Precision precision,
                                      const TensorShapes& optShapes) const {
  // Times hold for one device, its libraries, this Kiln's tactics and how they were timed
  // ("held": launches back to back behind a stream hold, see kTimedRegionMs).
  const DeviceInfo device = backend_.device();
  std::string key = std::string(toString(backend_.kind())) + "|" + device.name + "|" + device.libraries +
                    "|kiln " KILN_VERSION " held|" + layer.domain + "::" + layer.opType + "|" + toString(precision);
  for (const auto& in : layer.inputs) {
    auto it = optShapes.find(in);
    const Tensor* t = in.empty() ? nullptr : network.findTensor(in);
    key += "|" + (t ? std::string(toString(t->dtype)) : "-") + ":" + (it != optShapes.end() ? dimsToString(it->second) : "?");
  }
  for (const auto& [name, a] : layer.attributes) key += "|" + name + "=" + attributeText(a);
  return key;
}

// Timing inputs and outputs: views of buffers on the backend's device (weights: host views).
struct TacticSelector::Tensors {
  std::vector<TensorView> inputs, outputs;
  std::vector<DeviceBuffer> memory;
};

// A candidate ready to time: its step with its workspace and state.
struct TacticSelector::TimedRun {
  const Tactic* tactic;
  std::unique_ptr<Step> step;
  DeviceBuffer workspace;
  std::unique_ptr<StepState> state;
  std::vector<TensorView> inputs, outputs;  // the shared buffers, in the tactic's formats
  StepArgs args;
  int launches = 1;             // per timed region
  double holdMicroseconds = 0;  // the stream held back before each region
  std::vector<double> milliseconds;
};

std::optional<TacticSelector::Tensors> TacticSelector::makeTensors(const Network& network, const Layer& layer,
                                                                  Precision precision, const TensorShapes& optShapes,
                                                                  Stream& stream, std::string& why) const {
  Tensors tensors;
  // What the step's memory holds: the layer's precision for float32 tensors on backends that read
  // and write exactly that, the declared type elsewhere.
  auto storage = [&](DataType declared) {
    return declared == DataType::kFloat32 && !backend_.convertsFloatStorage() ? activationStorageOf(layer, precision)
                                                                              : declared;
  };
  auto make = [&](const std::string& name, bool input) -> std::optional<TensorView> {
    TensorView view;
    if (name.empty()) return view;
    const Tensor& t = network.tensor(name);
    if (t.isConstant()) {  // weights: the step has its own copy where it needs one
      view.dtype = t.constant->dtype();
      view.dims = t.constant->dims();
      view.data = const_cast<void*>(t.constant->rawData());
      view.isConstant = true;
      return view;
    }
    auto shape = optShapes.find(t.name);
    if (shape == optShapes.end() || t.kind != ValueKind::kTensor || t.dtype == DataType::kString ||
        t.dtype == DataType::kUndefined) {
      why = "tensor '" + t.name + "' has no numeric value of known shape to time with";
      return std::nullopt;
    }
    view.dtype = storage(t.dtype);
    view.dims = shape->second;
    view.space = backend_.memorySpace();
    DeviceBuffer memory = allocateBuffer(backend_.allocator(), std::max<uint64_t>(view.byteSize(), 1), 256);
    if (input) {
      HostTensor host = randomTensor(t.dtype, view.dims, seedForTensor(1234, t.name));
      if (view.dtype != t.dtype) {
        HostTensor stored(view.dtype, view.dims);
        convertFloatStorage(t.dtype, host.rawData(), view.dtype, stored.rawData(), host.elementCount());
        host = stored;
      }
      stream.copy(memory.get(), host.rawData(), host.byteSize());
    }
    view.data = memory.get();
    tensors.memory.push_back(std::move(memory));
    return view;
  };
  for (const auto& name : layer.inputs) {
    auto view = make(name, true);
    if (!view) return std::nullopt;
    tensors.inputs.push_back(*view);
  }
  if (!subgraphReferences(layer).empty()) {
    why = "layers with subgraphs are not timed";
    return std::nullopt;
  }
  for (const auto& name : layer.outputs) {
    auto view = make(name, false);
    if (!view) return std::nullopt;
    tensors.outputs.push_back(*view);
  }
  return tensors;
}

std::unique_ptr<TacticSelector::TimedRun> TacticSelector::prepare(const Network& network, const Layer& layer,
                                                                  const Tactic& tactic, const Tensors& tensors,
                                                                  Stream& stream) const {
  auto run = std::make_unique<TimedRun>();
  run->tactic = &tactic;
  run->step = backend_.instantiate(layer, tactic, layerSignature(network, layer));
  run->inputs = tensors.inputs;
  run->outputs = tensors.outputs;
  for (size_t i = 0; i < run->inputs.size() && i < tactic.inputFormats.size(); ++i)
    run->inputs[i].format = tactic.inputFormats[i];
  if (!run->outputs.empty()) run->outputs[0].format = tactic.outputFormat;
  const uint64_t workspaceBytes = run->step->workspaceBytes(run->inputs, run->outputs);
  if (workspaceBytes) run->workspace = allocateBuffer(backend_.allocator(), workspaceBytes, 256);
  run->state = run->step->createState();
  run->args.inputs = run->inputs;
  run->args.outputs = run->outputs;
  run->args.workspace = run->workspace.get();
  run->args.workspaceBytes = workspaceBytes;
  run->args.state = run->state.get();
  run->step->enqueue(run->args, stream);  // warm-up: per-shape state made here
  stream.synchronize();
  // A probe: the host's enqueue time, and the time between events around one launch (device
  // time plus whatever host time the device waited for) to size the timed regions.
  auto start = backend_.createEvent(), end = backend_.createEvent();
  const auto hostStart = std::chrono::steady_clock::now();
  start->record(stream);
  run->step->enqueue(run->args, stream);
  end->record(stream);
  const double hostMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - hostStart).count();
  end->synchronize();
  const double probeMs = end->millisecondsSince(*start);
  run->launches = probeMs >= kTimedRegionMs
                      ? 1
                      : std::clamp(int(std::ceil(kTimedRegionMs / std::max(probeMs, 1e-4))), 1, kMaxLaunches);
  run->holdMicroseconds = std::min(kMaxHoldMs, 1.5 * hostMs * run->launches + 0.02) * 1000;
  return run;
}

void TacticSelector::timeCandidates(const Network& network, const Layer& layer, Precision precision,
                                    const TensorShapes& optShapes, const std::vector<const Tactic*>& tactics,
                                    std::vector<TacticCandidate*> entries) {
  auto stream = backend_.createStream();
  std::string why;
  auto tensors = makeTensors(network, layer, precision, optShapes, *stream, why);
  if (!tensors) {
    for (TacticCandidate* entry : entries) entry->status = "not timed: " + why;
    return;
  }
  std::vector<std::unique_ptr<TimedRun>> runs;
  std::vector<TacticCandidate*> runEntries;
  for (size_t c = 0; c < tactics.size(); ++c) {
    if (listener_) listener_(tactics[c]->id);  // outside the try: a cancelled build is no failed tactic
    try {
      runs.push_back(prepare(network, layer, *tactics[c], *tensors, *stream));
      runEntries.push_back(entries[c]);
    } catch (const Error& e) {
      entries[c]->status = std::string("failed: ") + e.what();  // a tactic that cannot run the layer is no candidate
    }
  }
  // Rounds take every candidate in turn, so a change in machine load between them hits all alike.
  auto start = backend_.createEvent(), end = backend_.createEvent();
  for (int round = 0; round < kTimedRuns; ++round)
    for (auto& run : runs) {
      if (listener_) listener_(run->tactic->id);
      stream->holdBack(run->holdMicroseconds);
      start->record(*stream);
      for (int launch = 0; launch < run->launches; ++launch) run->step->enqueue(run->args, *stream);
      end->record(*stream);
      end->synchronize();
      run->milliseconds.push_back(end->millisecondsSince(*start) / run->launches);
    }
  for (size_t r = 0; r < runs.size(); ++r) {
    auto& times = runs[r]->milliseconds;
    std::nth_element(times.begin(), times.begin() + kTimedRuns / 2, times.end());
    runEntries[r]->milliseconds = times[kTimedRuns / 2];
    runEntries[r]->status = "timed";
  }
}

TacticChoice TacticSelector::select(const Network& network, const Layer& layer, Precision precision,
                                    const TensorShapes& optShapes, const TensorShapes& maxShapes,
                                    const std::vector<TensorFormat>& likelyInputFormats, const std::string& forced) {
  LayerInputs inputs = describeInputs(network, layer, maxShapes);
  inputs.candidateBudget = search_.candidateBudget;
  auto candidates = backend_.tactics(layer, precision, inputs);
  if (candidates.empty()) throw Error(ErrorCode::kInternal, layer.describe() + " has no tactic");
  if (!disabledSources_.empty()) {
    std::string dropped;
    std::erase_if(candidates, [&](const Tactic& t) {
      const std::string source = t.id.substr(0, t.id.find('.'));
      const bool off = std::find(disabledSources_.begin(), disabledSources_.end(), source) != disabledSources_.end();
      if (off) dropped += (dropped.empty() ? "" : ", ") + t.id;
      return off;
    });
    if (candidates.empty())
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + " has only tactics from switched-off sources (" +
                                                   dropped + "); allow one with --tactic-sources");
  }
  std::vector<TacticCandidate> unavailable;  // reported after the others
  std::erase_if(candidates, [&](const Tactic& t) {
    if (t.unavailable.empty()) return false;
    unavailable.push_back({t.id, -1, "unavailable: " + t.unavailable, 0});
    return true;
  });
  for (const TacticCandidate& c : unavailable)
    if (c.tactic == forced)
      throw Error(ErrorCode::kInvalidArgument,
                  layer.describe() + ": the forced tactic '" + forced + "' is " + c.status);
  if (candidates.empty())
    throw Error(ErrorCode::kInternal, layer.describe() + " has no usable tactic (" + unavailable.front().status + ")");
  TacticChoice choice = chooseAmong(network, layer, precision, optShapes, candidates, likelyInputFormats, forced);
  choice.candidates.insert(choice.candidates.end(), unavailable.begin(), unavailable.end());
  return choice;
}

TacticChoice TacticSelector::chooseAmong(const Network& network, const Layer& layer, Precision precision,
                                         const TensorShapes& optShapes, std::vector<Tactic>& candidates,
                                         const std::vector<TensorFormat>& likelyInputFormats,
                                         const std::string& forced) {
  if (!forced.empty()) {
    TacticChoice choice;
    std::string offered;
    for (const Tactic& t : candidates) {
      choice.candidates.push_back({t.id, -1, t.id == forced ? "forced" : "not timed: another tactic was forced",
                                   int64_t(t.workspaceBytes)});
      offered += (offered.empty() ? "" : ", ") + t.id;
      if (t.id != forced) continue;
      choice.tactic = t.id;
      choice.takesChannelsLast = t.takesChannelsLast;
      choice.payload = t.payload;
      choice.workspaceBytes = t.workspaceBytes;
    }
    if (choice.tactic.empty())
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": the forced tactic '" + forced +
                                                   "' is not one of its tactics (" + offered + ")");
    return choice;
  }
  // In a channels-last chain, time the tactics that take it the way they will run there.
  const bool inChain = std::find(likelyInputFormats.begin(), likelyInputFormats.end(), TensorFormat::kNHWC) !=
                       likelyInputFormats.end();
  std::string layoutKey;
  if (inChain || backend_.timesChannelsLastOutputs()) {
    layoutKey = "|in:";
    for (TensorFormat f : likelyInputFormats) layoutKey += std::string(toString(f)) + ",";
    if (!inChain) layoutKey += "|out:nhwc";
    for (Tactic& t : candidates)
      if (t.takesChannelsLast) {
        t.inputFormats = likelyInputFormats;
        t.outputFormat = TensorFormat::kNHWC;
      }
  }
  TacticChoice choice;
  std::vector<const Tactic*> usable;
  for (const Tactic& t : candidates) {
    choice.candidates.push_back({t.id, -1, "", int64_t(t.workspaceBytes)});
    if (t.workspaceBytes > workspaceLimit_)
      choice.candidates.back().status = "skipped: needs " + bytesText(t.workspaceBytes) + " of workspace, over the " +
                                        bytesText(workspaceLimit_) + " limit";
    else
      usable.push_back(&t);
  }
  if (usable.empty())
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": every tactic needs more workspace than the " +
                                                 bytesText(workspaceLimit_) + " limit (the least is " +
                                                 bytesText(candidates.front().workspaceBytes) +
                                                 "); raise the workspace limit (--workspace)");
  auto entryOf = [&](const Tactic* t) -> TacticCandidate& { return choice.candidates[size_t(t - candidates.data())]; };
  const bool narrowed = usable.size() > search_.maxCandidates;
  if (narrowed) {
    for (size_t i = search_.maxCandidates; i < usable.size(); ++i)
      entryOf(usable[i]).status = "not timed: optimization level " + std::to_string(search_.level) +
                                  (search_.maxCandidates == 1 ? " takes the first candidate"
                                                              : " times the first " + std::to_string(search_.maxCandidates));
    usable.resize(search_.maxCandidates);
  }
  if (usable.size() == 1)
    entryOf(usable[0]).status = narrowed ? "first candidate (optimization level " + std::to_string(search_.level) + ")"
                                         : "only candidate";
  const bool compares = usable.size() > 1 || timeOneCandidate_;
  const std::string base = compares ? signature(network, layer, precision, optShapes) + layoutKey : "";
  std::vector<const Tactic*> toTime;
  std::vector<TacticCandidate*> toTimeEntries;
  for (const Tactic* t : usable) {
    if (!compares) continue;  // nothing to compare it with
    if (auto cached = cache_.find(base + "|" + t->id)) {
      entryOf(t).milliseconds = *cached;
      entryOf(t).status = "cached";
    } else {
      toTime.push_back(t);
      toTimeEntries.push_back(&entryOf(t));
    }
  }
  if (!toTime.empty()) timeCandidates(network, layer, precision, optShapes, toTime, toTimeEntries);
  const Tactic* best = nullptr;
  for (const Tactic* t : usable) {
    const TacticCandidate& entry = entryOf(t);
    if (entry.status == "timed") cache_.put(base + "|" + t->id, entry.milliseconds);
    if (entry.milliseconds >= 0 && (!best || entry.milliseconds < entryOf(best).milliseconds)) best = t;
  }
  if (!best) best = usable.front();  // nothing timed: the backend's best guess
  // A near tie goes to a tactic that takes channels-last activations: its neighbours may then skip
  // two re-layouts, worth more than the few percent given up here (resnet18's strided 1x1 convs).
  if (!best->takesChannelsLast)
    for (const Tactic* t : usable)
      if (t->takesChannelsLast && entryOf(t).milliseconds >= 0 &&
          entryOf(t).milliseconds <= entryOf(best).milliseconds * (1 + kChannelsLastTieMargin)) {
        best = t;
        break;
      }
  choice.tactic = best->id;
  choice.takesChannelsLast = best->takesChannelsLast;
  choice.payload = best->payload;
  choice.workspaceBytes = best->workspaceBytes;
  choice.milliseconds = std::max(0.0, entryOf(best).milliseconds);
  choice.timed = !toTime.empty();
  choice.fromCache = compares && toTime.empty();
  return choice;
}

}  // namespace kiln
