#include "conversion_layers.h"

#include <kiln/error.h>

#include "../ops/conversion.h"
#include "../ops/fused.h"
#include "../ops/quantized.h"
#include "../runtime/subgraph_cache.h"

#include <algorithm>
#include <set>

namespace kiln {

DataType storageTypeOf(Precision precision) {
  switch (precision) {
    case Precision::kFP16: return DataType::kFloat16;
    case Precision::kBF16: return DataType::kBFloat16;
    default: return DataType::kFloat32;
  }
}

DataType activationStorageOf(const Layer& layer, Precision precision) {
  if (quantized::isQuantizedLayer(layer)) {
    const std::string storage = layer.attrString(quantized::kFloatStorage, "");
    if (storage == "fp16") return DataType::kFloat16;
    if (storage == "bf16") return DataType::kBFloat16;
  }
  return storageTypeOf(precision);
}

namespace {

bool isObject(const Tensor& t) { return t.kind != ValueKind::kTensor || t.dtype == DataType::kString; }

bool samePlace(const PlannedTensor& a, const PlannedTensor& b) {
  return a.space == b.space && a.storage == b.storage && a.format == b.format;
}

class Converter {
 public:
  Converter(Network& network, std::map<std::string, PlannedTensor>& tensors, const PlacementBackends& backends)
      : net_(network), tensors_(tensors), backends_(backends) {}

  std::vector<Layer> layers;
  std::vector<PlannedLayer> planned;

  // The name of `tensor` converted to `want` (made once per target and shared by its readers); the
  // last conversion writes `finalName` when one is given.
  std::string convert(const std::string& tensor, const PlannedTensor& want, const std::string& finalName = "",
                      bool copyAnyway = false) {
    const std::string key = tensor + "|" + toString(want.space) + "|" + std::string(toString(want.storage)) + "|" +
                            toString(want.format);
    if (finalName.empty())
      if (auto it = made_.find(key); it != made_.end()) return it->second;
    std::string current = tensor;
    PlannedTensor place = tensors_.at(tensor);
    const std::string model = place.modelTensor.empty() ? tensor : place.modelTensor;
    auto step = [&](const char* op, LayerRole role, const std::string& suffix, PlannedTensor next,
                    const Backend& runner, std::map<std::string, Attribute> attributes) {
      next.modelTensor = model;
      next.converted = true;
      const bool last = samePlace(next, want);
      const std::string output = last && !finalName.empty() ? finalName : unique(model + ":" + suffix);
      append(current, output, op, role, runner, std::move(attributes), next);
      current = output;
      place = next;
    };
    if (place.space != want.space || (copyAnyway && samePlace(place, want))) {
      PlannedTensor next = place;
      next.space = want.space;
      const Backend& copier = place.space == MemorySpace::kHost && want.space == MemorySpace::kHost ? backends_.cpu
                                                                                                    : backends_.engine;
      step(conversion::kCopy, LayerRole::kCopy, toString(want.space), next, copier,
           {{conversion::kTo, std::string(toString(want.space))}});
    }
    const Backend& there = want.space == MemorySpace::kDevice ? backends_.engine : backends_.cpu;
    if (place.storage != want.storage) {
      PlannedTensor next = place;
      next.storage = want.storage;
      step(conversion::kCast, LayerRole::kCast, std::string(toString(want.storage)), next, there,
           {{conversion::kTo, int64_t(want.storage)}});
    }
    if (place.format != want.format) {
      PlannedTensor next = place;
      next.format = want.format;
      step(conversion::kReformat, LayerRole::kReformat, toString(want.format), next, there,
           {{conversion::kFrom, std::string(toString(place.format))}, {conversion::kTo, std::string(toString(want.format))}});
    }
    if (finalName.empty()) made_[key] = current;
    return current;
  }

  std::string unique(const std::string& base) {
    std::string name = base;
    for (int n = 2; net_.findTensor(name) || tensors_.count(name); ++n) name = base + "." + std::to_string(n);
    return name;
  }

 private:
  void append(const std::string& input, const std::string& output, const char* op, LayerRole role,
              const Backend& runner, std::map<std::string, Attribute> attributes, const PlannedTensor& place) {
    const Tensor source = net_.tensor(input);
    Tensor& made = net_.addTensor(output);
    made.dtype = source.dtype;
    made.shape = source.shape;
    made.kind = source.kind;
    tensors_[output] = place;
    Layer layer;
    layer.name = output;
    layer.domain = fused::kDomain;
    layer.opType = op;
    layer.opsetVersion = 1;
    layer.inputs = {input};
    layer.outputs = {output};
    layer.attributes = std::move(attributes);
    PlannedLayer p;
    p.backend = runner.name();
    p.role = role;
    LayerInputs in;
    in.types = {source.dtype};
    in.dims = {{}};
    in.weights = {nullptr};
    p.tactic = runner.tactics(layer, Precision::kFP32, in).at(0).id;
    if (role == LayerRole::kReformat)
      p.inputFormats = {std::get<std::string>(layer.attributes.at(conversion::kFrom).value()) == "nhwc" ? TensorFormat::kNHWC
                                                                                                       : TensorFormat::kLinear};
    p.outputFormat = place.format;
    layers.push_back(std::move(layer));
    planned.push_back(std::move(p));
  }

  Network& net_;
  std::map<std::string, PlannedTensor>& tensors_;
  const PlacementBackends& backends_;
  std::map<std::string, std::string> made_;
};

}  // namespace

void placeTensorsAndConvert(Network& network, std::vector<PlannedLayer>& layers,
                            std::map<std::string, PlannedTensor>& tensors, const ShapeValuePlan& shapes,
                            const PlacementBackends& backends) {
  const MemorySpace engineSpace = backends.engine.memorySpace();
  const auto& graphInputs = network.inputs();
  const std::vector<std::string> graphOutputs = network.outputs();

  // A graph output that is a weight (a model folded to a constant) becomes a copy of it.
  std::vector<std::pair<std::string, std::string>> constantOutputs;  // output, the weight's new name
  for (const auto& name : graphOutputs) {
    Tensor* t = network.findTensor(name);
    if (!t || !t->isConstant()) continue;
    std::string weight = name + ":constant";
    for (int n = 2; network.findTensor(weight); ++n) weight = name + ":constant." + std::to_string(n);
    Tensor moved = *t;
    moved.name = weight;
    network.addTensor(weight) = moved;
    for (Layer& l : network.layers())
      for (auto& in : l.inputs)
        if (in == name) in = weight;
    t->constant.reset();
    tensors[weight] = {moved.dtype, TensorFormat::kLinear, MemorySpace::kHost, name, false};
    constantOutputs.emplace_back(name, weight);
  }

  // Where each tensor starts: where its producer writes it.
  for (const auto& name : graphInputs) {
    const Tensor& t = network.tensor(name);
    if (t.isConstant()) continue;
    const bool host = shapes.shapeInputs.count(name) || isObject(t);
    tensors[name] = {t.dtype, TensorFormat::kLinear, host ? MemorySpace::kHost : engineSpace, name, false};
  }
  for (size_t i = 0; i < network.layers().size(); ++i) {
    const Layer& layer = network.layers()[i];
    const PlannedLayer& p = layers[i];
    const Backend& backend = backends.named(p.backend);
    for (size_t k = 0; k < layer.outputs.size(); ++k) {
      const std::string& name = layer.outputs[k];
      if (name.empty()) continue;
      const Tensor& t = network.tensor(name);
      PlannedTensor place{t.dtype, k == 0 ? p.outputFormat : TensorFormat::kLinear, backend.memorySpace(), name, false};
      if (p.phase == LayerPhase::kShape || isObject(t)) place.space = MemorySpace::kHost;
      const bool graphOutput = std::find(graphOutputs.begin(), graphOutputs.end(), name) != graphOutputs.end();
      if (t.dtype == DataType::kFloat32 && p.phase == LayerPhase::kLaunch &&
          !(graphOutput && backend.convertsFloatStorage()))
        place.storage = activationStorageOf(layer, p.precision);
      tensors[name] = place;
    }
  }

  // Graph outputs live in the engine's memory space, declared type, linear: where the producer
  // writes otherwise, it writes a renamed tensor and conversions end in the output's name.
  std::vector<std::pair<std::string, std::string>> convertedOutputs;  // output, renamed producer tensor
  std::map<std::string, std::string> renamed;
  Converter converter(network, tensors, backends);
  auto outputPlace = [&](const std::string& name) {
    const Tensor& t = network.tensor(name);
    return PlannedTensor{t.dtype, TensorFormat::kLinear, isObject(t) ? MemorySpace::kHost : engineSpace, name, false};
  };
  // Shape values live in the shape phase's host memory: a graph output among them is copied out.
  std::set<std::string> shapeValueOutputs;
  for (size_t i = 0; i < network.layers().size(); ++i)
    if (layers[i].phase == LayerPhase::kShape)
      for (const auto& out : network.layers()[i].outputs)
        if (std::find(graphOutputs.begin(), graphOutputs.end(), out) != graphOutputs.end()) shapeValueOutputs.insert(out);
  for (const auto& name : graphOutputs) {
    if (!tensors.count(name) || std::find(graphInputs.begin(), graphInputs.end(), name) != graphInputs.end()) continue;
    if (samePlace(tensors.at(name), outputPlace(name)) && !shapeValueOutputs.count(name)) continue;
    const std::string produced = converter.unique(name + ":produced");
    Tensor copy = network.tensor(name);
    copy.name = produced;
    network.addTensor(produced) = copy;
    tensors[produced] = tensors.at(name);
    tensors[produced].modelTensor = name;
    renamed[name] = produced;
    convertedOutputs.emplace_back(name, produced);
  }
  auto current = [&](const std::string& name) {
    auto it = renamed.find(name);
    return it == renamed.end() ? name : it->second;
  };

  for (size_t i = 0; i < network.layers().size(); ++i) {
    Layer layer = network.layers()[i];
    PlannedLayer p = layers[i];
    for (auto& out : layer.outputs) out = current(out);
    for (auto& in : layer.inputs) in = current(in);
    p.implicitInputs.clear();
    for (const auto& ref : subgraphReferences(layer)) p.implicitInputs.push_back(current(ref));
    if (p.phase == LayerPhase::kLaunch) {
      const Backend& backend = backends.named(p.backend);
      for (size_t k = 0; k < layer.inputs.size(); ++k) {
        const std::string& name = layer.inputs[k];
        const Tensor* t = name.empty() ? nullptr : network.findTensor(name);
        if (!t || t->isConstant()) continue;
        const PlannedTensor& have = tensors.at(name);
        const bool valueInput = k < shapes.valueInputs[i].size() && shapes.valueInputs[i][k];
        PlannedTensor want = have;
        want.space = valueInput || isObject(*t) ? MemorySpace::kHost : backend.memorySpace();
        if (!valueInput && !backend.convertsFloatStorage())
          want.storage = t->dtype == DataType::kFloat32 ? activationStorageOf(layer, p.precision) : t->dtype;
        want.format = k < p.inputFormats.size() ? p.inputFormats[k] : TensorFormat::kLinear;
        if (!samePlace(have, want)) layer.inputs[k] = converter.convert(name, want);
      }
      for (auto& ref : p.implicitInputs) {
        const Tensor* t = network.findTensor(ref);
        if (!t || t->isConstant()) continue;
        PlannedTensor want = tensors.at(ref);
        want.space = MemorySpace::kHost;
        want.format = TensorFormat::kLinear;
        if (!samePlace(tensors.at(ref), want)) ref = converter.convert(ref, want);
      }
    }
    converter.layers.push_back(std::move(layer));
    converter.planned.push_back(std::move(p));
  }
  for (const auto& [output, produced] : convertedOutputs) {
    PlannedTensor want = outputPlace(output);
    converter.convert(produced, want, output, shapeValueOutputs.count(output) != 0);
  }
  for (const auto& [output, weight] : constantOutputs) converter.convert(weight, outputPlace(output), output, true);
  network.layers() = std::move(converter.layers);
  layers = std::move(converter.planned);
}

}  // namespace kiln
