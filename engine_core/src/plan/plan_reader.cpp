#include "plan_format.h"

#include "plan_generated.h"

#include <kiln/error.h>

#include <cstring>

namespace kiln {
namespace {

[[noreturn]] void corrupt(const std::string& why) {
  throw Error(ErrorCode::kInvalidModel, "the plan is corrupt or not a Kiln plan: " + why +
                                               "; rebuild it with `kiln build`");
}

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

std::vector<std::string> strings(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  std::vector<std::string> out;
  if (v)
    for (const auto* s : *v) out.push_back(str(s));
  return out;
}

template <class T>
std::vector<T> values(const flatbuffers::Vector<T>* v) {
  return v ? std::vector<T>(v->begin(), v->end()) : std::vector<T>{};
}

class PlanDeserializer {
 public:
  PlanDeserializer(const uint8_t* weights, uint64_t weightsBytes) : weights_(weights), weightsBytes_(weightsBytes) {}

  std::shared_ptr<Network> graph(const fb::Graph* g, std::vector<PlannedLayer>* planned, int depth = 0) {
    if (!g) corrupt("a graph is missing");
    if (depth > 64) corrupt("subgraphs nest too deeply");
    auto net = std::make_shared<Network>();
    net->info().graphName = str(g->name());
    auto inputs = strings(g->inputs());
    if (g->tensors())
      for (const auto* t : *g->tensors()) {
        if (!t) corrupt("a tensor entry is empty");
        std::string name = str(t->name());
        Tensor& dst = std::find(inputs.begin(), inputs.end(), name) != inputs.end()
                          ? net->addInput(name, dataType(t->dtype()), shape(t), valueKind(t->kind()))
                          : net->addTensor(name);
        dst.dtype = dataType(t->dtype());
        dst.kind = valueKind(t->kind());
        dst.shape = shape(t);
        if (t->is_constant()) dst.constant = constant(t, "tensor '" + name + "'");
      }
    for (const auto& in : inputs)
      if (!net->findTensor(in)) corrupt("graph input '" + in + "' has no tensor entry");
    if (g->layers())
      for (const auto* l : *g->layers()) {
        if (!l) corrupt("a layer entry is empty");
        Layer layer;
        layer.name = str(l->name());
        layer.opType = str(l->op_type());
        layer.domain = str(l->domain());
        layer.opsetVersion = l->opset();
        layer.inputs = strings(l->inputs());
        layer.outputs = strings(l->outputs());
        layer.origins = strings(l->origins());
        if (l->attributes())
          for (const auto* a : *l->attributes()) {
            if (!a) corrupt("an attribute entry is empty");
            layer.attributes[str(a->name())] = attribute(a, depth);
          }
        if (planned) planned->push_back(plannedLayer(l, layer.name));
        net->addLayer(std::move(layer));
      }
    for (const auto& out : strings(g->outputs())) net->markOutput(out);
    return net;
  }

 private:
  static PlannedLayer plannedLayer(const fb::Layer* l, const std::string& name) {
    const std::string what = "layer '" + name + "'";
    PlannedLayer p;
    if (l->precision() > uint8_t(Precision::kFP4)) corrupt(what + " has an unknown precision");
    p.precision = Precision(l->precision());
    p.tactic = str(l->tactic());
    p.backend = str(l->backend());
    p.tacticPayload = values(l->tactic_payload());
    for (uint8_t f : values(l->input_formats())) p.inputFormats.push_back(format(f, what));
    p.outputFormat = format(l->output_format(), what);
    p.workspaceBytes = l->workspace_bytes();
    if (l->role() > uint8_t(LayerRole::kReformat)) corrupt(what + " has an unknown role");
    p.role = LayerRole(l->role());
    if (l->phase() > uint8_t(LayerPhase::kShape)) corrupt(what + " has an unknown phase");
    p.phase = LayerPhase(l->phase());
    p.dataDependentShape = str(l->data_dependent());
    p.fallbackReason = str(l->fallback());
    p.implicitInputs = strings(l->implicit_inputs());
    if (p.backend.empty() || p.tactic.empty()) corrupt(what + " names no backend or tactic");
    return p;
  }

  static TensorFormat format(uint8_t v, const std::string& what) {
    if (v > uint8_t(TensorFormat::kNHWC)) corrupt(what + " has an unknown tensor format");
    return TensorFormat(v);
  }

 public:
  static PlannedTensor placement(const fb::TensorPlacement* t) {
    const std::string what = "tensor '" + str(t->tensor()) + "'";
    PlannedTensor p;
    p.storage = dataType(t->storage());
    p.format = format(t->format(), what);
    if (t->space() > uint8_t(MemorySpace::kDevice)) corrupt(what + " has an unknown memory space");
    p.space = MemorySpace(t->space());
    p.modelTensor = str(t->model_tensor());
    p.converted = t->converted();
    return p;
  }

 private:
  static DataType dataType(uint8_t v) {
    if (v > uint8_t(DataType::kString)) corrupt("unknown data type code " + std::to_string(v));
    return DataType(v);
  }
  static ValueKind valueKind(uint8_t v) {
    if (v > uint8_t(ValueKind::kOptionalSequence)) corrupt("unknown value kind " + std::to_string(v));
    return ValueKind(v);
  }
  static Shape shape(const fb::Tensor* t) {
    if (!t->has_rank()) return Shape::unknownRank();
    std::vector<Dim> dims;
    if (t->dims())
      for (const auto* d : *t->dims()) {
        if (!d) corrupt("a dimension entry is empty");
        if (d->value() >= 0) dims.emplace_back(d->value());
        else if (d->symbol()) dims.push_back(Dim::symbol(d->symbol()->str()));
        else dims.push_back(Dim::unknown());
      }
    return Shape(std::move(dims));
  }

  HostTensor constant(const fb::Tensor* t, const std::string& what) {
    DataType dtype = dataType(t->constant_dtype());
    std::vector<int64_t> dims = values(t->constant_dims());
    int64_t count = 1;
    for (int64_t d : dims) {
      if (d < 0 || (d != 0 && count > (int64_t(1) << 40) / d)) corrupt(what + " has an invalid shape");
      count *= d;
    }
    if (dtype == DataType::kString) {
      auto s = strings(t->strings());
      if (int64_t(s.size()) != count) corrupt(what + " has the wrong number of strings");
      return HostTensor::fromVector<std::string>(dims, s);
    }
    if (dtype == DataType::kUndefined) corrupt(what + " has no data type");
    uint64_t need = uint64_t(count) * byteSize(dtype);
    if (t->weights_bytes() != need || t->weights_offset() > weightsBytes_ ||
        need > weightsBytes_ - t->weights_offset())
      corrupt(what + " points outside the weights blob");
    HostTensor out(dtype, dims);
    if (need) std::memcpy(out.rawData(), weights_ + t->weights_offset(), need);
    return out;
  }

  Attribute attribute(const fb::Attribute* a, int depth) {
    std::string what = "attribute '" + str(a->name()) + "'";
    switch (a->kind()) {
      case 0: return a->i();
      case 1: return a->f();
      case 2: return str(a->s());
      case 3: return values(a->ints());
      case 4: return values(a->floats());
      case 5: return strings(a->strings());
      case 6:
        if (!a->tensor()) corrupt(what + " has no tensor");
        return constant(a->tensor(), what);
      case 7:
        if (!a->graphs() || a->graphs()->size() != 1) corrupt(what + " must hold one graph");
        return Attribute::Graph(graph(a->graphs()->Get(0), nullptr, depth + 1));
      case 8: {
        std::vector<Attribute::Graph> gs;
        if (a->graphs())
          for (const auto* g : *a->graphs()) gs.push_back(graph(g, nullptr, depth + 1));
        return gs;
      }
    }
    corrupt(what + " has an unknown kind");
  }

  const uint8_t* weights_;
  uint64_t weightsBytes_;
};

}  // namespace

std::shared_ptr<EnginePlan> readPlan(const std::vector<uint8_t>& bytes) {
  if (bytes.size() < sizeof(PlanHeader)) corrupt("it is " + std::to_string(bytes.size()) + " bytes, shorter than the header");
  PlanHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kPlanMagic, 8) != 0) corrupt("the file does not start with the KILNPLAN magic");
  if (h.formatVersion != kPlanFormatVersion)
    throw Error(ErrorCode::kUnsupported, "the plan has format version " + std::to_string(h.formatVersion) + " (" +
                                             (h.formatVersion < kPlanFormatVersion ? "older" : "newer") +
                                             " than this Kiln's " + std::to_string(kPlanFormatVersion) +
                                             "); rebuild it from the model with this Kiln's `kiln build`");
  uint64_t size = bytes.size();
  if (h.reserved != 0) corrupt("its header has non-zero reserved bytes");
  if (h.headerBytes != sizeof(PlanHeader) || h.metadataOffset < sizeof(PlanHeader) || h.metadataOffset > size ||
      h.metadataBytes > size - h.metadataOffset || h.weightsOffset > size || h.weightsBytes > size - h.weightsOffset ||
      h.weightsOffset < h.metadataOffset + h.metadataBytes)
    corrupt("its sections point outside the file (truncated?)");
  if (planChecksum(bytes.data() + sizeof(PlanHeader), size - sizeof(PlanHeader)) != h.checksum)
    corrupt("the checksum does not match (the file was modified or damaged)");
  const uint8_t* meta = bytes.data() + h.metadataOffset;
  flatbuffers::Verifier verifier(meta, h.metadataBytes, 128, 10'000'000);
  if (!fb::VerifyPlanBuffer(verifier)) corrupt("its metadata fails FlatBuffers verification");
  const fb::Plan* plan = fb::GetPlan(meta);

  auto d = std::make_shared<EnginePlan>();
  d->info.formatVersion = h.formatVersion;
  d->info.kilnVersion = str(plan->kiln_version());
  d->info.backend = str(plan->backend());
  d->info.deviceName = str(plan->device_name());
  d->info.computeCapability = str(plan->compute_capability());
  d->info.buildFlags = str(plan->build_flags());
  d->info.worldSize = plan->world_size();
  d->info.rank = plan->rank();
  if (d->info.worldSize < 1 || d->info.rank < 0 || d->info.rank >= d->info.worldSize)
    corrupt("it says it is rank " + std::to_string(d->info.rank) + " of " + std::to_string(d->info.worldSize));
  PlanDeserializer reader(bytes.data() + h.weightsOffset, h.weightsBytes);
  d->network = reader.graph(plan->graph(), &d->layers);
  if (plan->profiles())
    for (const auto* p : *plan->profiles()) {
      OptimizationProfile profile;
      if (p && p->ranges())
        for (const auto* r : *p->ranges()) {
          if (!r) corrupt("a profile range is empty");
          profile.inputs[str(r->input())] = {values(r->min()), values(r->opt()), values(r->max())};
        }
      d->profiles.push_back(std::move(profile));
    }
  if (plan->placements())
    for (const auto* t : *plan->placements()) {
      if (!t) corrupt("a tensor placement is empty");
      d->tensors[str(t->tensor())] = PlanDeserializer::placement(t);
    }
  if (plan->memory())
    for (const auto* m : *plan->memory()) {
      if (!m) corrupt("a memory plan is empty");
      MemoryPlan memory;
      if (m->space() > uint8_t(MemorySpace::kDevice)) corrupt("a memory plan has an unknown memory space");
      memory.space = MemorySpace(m->space());
      memory.arenaBytes = m->arena_bytes();
      memory.naiveBytes = m->naive_bytes();
      if (m->assignments())
        for (const auto* a : *m->assignments()) {
          if (!a) corrupt("a memory assignment is empty");
          if (a->offset() > memory.arenaBytes || a->bytes() > memory.arenaBytes - a->offset())
            corrupt("memory assignment for '" + str(a->tensor()) + "' lies outside the arena");
          memory.assignments.push_back({str(a->tensor()), a->offset(), a->bytes()});
        }
      d->memory.push_back(std::move(memory));
    }
  try {
    d->report = BuildReport::fromJson(str(plan->report_json()));
  } catch (const Error&) {
    corrupt("its build report is malformed");
  }
  try {
    d->network->validate();
  } catch (const Error& e) {
    corrupt(std::string("its network is inconsistent: ") + e.what());
  }
  if (d->layers.size() != d->network->layers().size()) corrupt("its layer decisions do not match its layers");
  for (const auto& name : d->network->tensorNames())
    if (!d->network->tensor(name).isConstant() && !d->tensors.count(name))
      corrupt("tensor '" + name + "' has no placement");
  return d;
}

}  // namespace kiln
