#include "tactic_selector.h"

#include <kiln/error.h>

#include <algorithm>
#include <random>

namespace kiln {
namespace {

constexpr int kTimedRuns = 5;

std::string attributeText(const Attribute& a) {
  const auto& v = a.value();
  if (auto i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto f = std::get_if<float>(&v)) return std::to_string(*f);
  if (auto s = std::get_if<std::string>(&v)) return *s;
  if (auto is = std::get_if<std::vector<int64_t>>(&v)) return dimsToString(*is);
  return std::string(a.typeName());
}

LayerInputs describeInputs(const Network& network, const Layer& layer, const TensorShapes& shapes) {
  LayerInputs in;
  in.weights = layerWeights(network, layer);
  for (const auto& name : layer.inputs) {
    const Tensor* t = name.empty() ? nullptr : network.findTensor(name);
    in.types.push_back(t ? t->dtype : DataType::kUndefined);
    auto it = shapes.find(name);
    in.dims.push_back(it != shapes.end() ? it->second : std::vector<int64_t>{});
  }
  return in;
}

std::string bytesText(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

std::string TacticSelector::signature(const Network& network, const Layer& layer, Precision precision,
                                      const TensorShapes& optShapes) const {
  std::string key = std::string(toString(backend_.kind())) + "|" + backend_.device().name + "|" + layer.domain +
                    "::" + layer.opType + "|" + toString(precision);
  for (const auto& in : layer.inputs) {
    auto it = optShapes.find(in);
    const Tensor* t = in.empty() ? nullptr : network.findTensor(in);
    key += "|" + (t ? std::string(toString(t->dtype)) : "-") + ":" + (it != optShapes.end() ? dimsToString(it->second) : "?");
  }
  for (const auto& [name, a] : layer.attributes) key += "|" + name + "=" + attributeText(a);
  return key;
}

std::optional<double> TacticSelector::timeTactic(const Network& network, const Layer& layer, const Tactic& tactic,
                                                 const TensorShapes& optShapes, std::string& why) {
  DeviceAllocator& allocator = backend_.allocator();
  auto stream = backend_.createStream();
  std::vector<Value> storage(layer.inputs.size());
  std::vector<const Value*> inputs(layer.inputs.size(), nullptr);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < layer.inputs.size(); ++i) {
    if (layer.inputs[i].empty()) continue;
    const Tensor& t = network.tensor(layer.inputs[i]);
    if (t.isConstant()) {
      storage[i] = Value(*t.constant);  // weights: the step has its own copy where it needs one
    } else {
      auto shape = optShapes.find(t.name);
      if (shape == optShapes.end() || t.dtype != DataType::kFloat32) {
        why = "input '" + t.name + "' has no float32 value of known shape to time with";
        return std::nullopt;
      }
      HostTensor host(DataType::kFloat32, shape->second);
      for (int64_t k = 0; k < host.elementCount(); ++k) host.data<float>()[k] = dist(rng);
      DeviceBuffer memory = allocateBuffer(allocator, host.byteSize(), 64);
      stream->copy(memory.get(), host.rawData(), host.byteSize());
      storage[i] = Value(HostTensor::inArena(DataType::kFloat32, shape->second, memory, 0));
    }
    inputs[i] = &storage[i];
  }
  auto step = backend_.instantiate(layer, tactic, layerWeights(network, layer));
  const uint64_t workspaceBytes = step->workspaceBytes(inputs);
  DeviceBuffer workspace = workspaceBytes ? allocateBuffer(allocator, workspaceBytes, 64) : nullptr;
  std::vector<DeviceBuffer> outputs(layer.outputs.size());  // made by the first run, reused after
  StepIO io;
  io.inputs = inputs;
  io.workspace = workspace.get();
  io.workspaceBytes = workspaceBytes;
  io.outputs = [&](size_t index, DataType dtype, const std::vector<int64_t>& dims) -> HostTensor {
    if (byteSize(dtype) == 0) return {};
    if (!outputs.at(index)) outputs[index] = allocateBuffer(allocator, uint64_t(elementCount(dims)) * byteSize(dtype), 64);
    return HostTensor::inArena(dtype, dims, outputs[index], 0);
  };
  io.subgraphs = [](const Network&, const std::vector<Value>&) -> std::vector<Value> {
    throw Error(ErrorCode::kUnsupported, "layers with subgraphs are not timed");
  };
  auto start = backend_.createEvent(), end = backend_.createEvent();
  step->enqueue(io, *stream);  // warm-up
  std::vector<double> times;
  for (int run = 0; run < kTimedRuns; ++run) {
    start->record(*stream);
    step->enqueue(io, *stream);
    end->record(*stream);
    end->synchronize();
    times.push_back(end->millisecondsSince(*start));
  }
  std::nth_element(times.begin(), times.begin() + kTimedRuns / 2, times.end());
  return times[kTimedRuns / 2];
}

TacticChoice TacticSelector::select(const Network& network, const Layer& layer, Precision precision,
                                    const TensorShapes& optShapes, const TensorShapes& maxShapes) {
  auto candidates = backend_.tactics(layer, precision, describeInputs(network, layer, maxShapes));
  if (candidates.empty()) throw Error(ErrorCode::kInternal, layer.describe() + " has no tactic");
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
  const std::string base = usable.size() > 1 ? signature(network, layer, precision, optShapes) : "";
  const Tactic* best = nullptr;
  bool allCached = true;
  for (const Tactic* t : usable) {
    TacticCandidate& entry = entryOf(t);
    if (usable.size() == 1) {
      entry.status = "only candidate";
      break;
    }
    const std::string key = base + "|" + t->id;
    if (auto cached = cache_.find(key)) {
      entry.milliseconds = *cached;
      entry.status = "cached";
    } else {
      allCached = false;
      std::string why;
      try {
        if (auto ms = timeTactic(network, layer, *t, optShapes, why)) {
          entry.milliseconds = *ms;
          entry.status = "timed";
          cache_.put(key, *ms);
        } else {
          entry.status = "not timed: " + why;
        }
      } catch (const Error& e) {
        entry.status = std::string("failed: ") + e.what();  // a tactic that cannot run the layer is no candidate
      }
    }
    if (entry.milliseconds >= 0 && (!best || entry.milliseconds < entryOf(best).milliseconds)) best = t;
  }
  if (!best) best = usable.front();  // nothing timed: the backend's best guess
  choice.tactic = best->id;
  choice.workspaceBytes = best->workspaceBytes;
  choice.milliseconds = std::max(0.0, entryOf(best).milliseconds);
  choice.fromCache = usable.size() > 1 && allCached;
  choice.timed = usable.size() > 1 && !allCached;
  return choice;
}

}  // namespace kiln
