#include "plan_format.h"

#include "plan_generated.h"

#include <kiln/error.h>

#include <cstring>

namespace kiln {

uint64_t planChecksum(const uint8_t* data, uint64_t size) {
  uint64_t hash = 1469598103934665603ull;
  for (uint64_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

class PlanSerializer {
 public:
  std::vector<uint8_t> weights;

  Offset<fb::Graph> graph(const Network& net, const std::vector<PlannedLayer>* planned = nullptr) {
    std::vector<Offset<fb::Tensor>> tensors;
    for (const auto& name : net.tensorNames()) tensors.push_back(tensor(net.tensor(name)));
    std::vector<Offset<fb::Layer>> layers;
    for (size_t i = 0; i < net.layers().size(); ++i)
      layers.push_back(layer(net.layers()[i], planned && i < planned->size() ? &(*planned)[i] : nullptr));
    return fb::CreateGraph(fbb, fbb.CreateString(net.info().graphName), fbb.CreateVector(tensors),
                           fbb.CreateVector(layers), fbb.CreateVectorOfStrings(net.inputs()),
                           fbb.CreateVectorOfStrings(net.outputs()));
  }

  FlatBufferBuilder fbb{1 << 16};

 private:
  uint64_t appendWeights(const HostTensor& t) {
    uint64_t offset = (weights.size() + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
    weights.resize(offset + t.byteSize());
    if (t.byteSize()) std::memcpy(weights.data() + offset, t.rawData(), t.byteSize());
    return offset;
  }

  Offset<fb::Tensor> constantTensor(const std::string& name, DataType declared, const HostTensor& value, uint8_t kind,
                                    Offset<flatbuffers::Vector<Offset<fb::Dim>>> dims, bool hasRank) {
    Offset<flatbuffers::Vector<Offset<flatbuffers::String>>> strings;
    uint64_t offset = 0, bytes = 0;
    if (value.dtype() == DataType::kString) {
      const auto* s = value.data<std::string>();
      strings = fbb.CreateVectorOfStrings(std::vector<std::string>(s, s + value.elementCount()));
    } else {
      offset = appendWeights(value);
      bytes = value.byteSize();
    }
    auto nameOffset = fbb.CreateString(name);
    auto constDims = fbb.CreateVector(value.dims());
    fb::TensorBuilder b(fbb);
    b.add_name(nameOffset);
    b.add_dtype(uint8_t(declared));
    b.add_constant_dtype(uint8_t(value.dtype()));
    b.add_kind(kind);
    b.add_has_rank(hasRank);
    if (!dims.IsNull()) b.add_dims(dims);
    b.add_is_constant(true);
    b.add_constant_dims(constDims);
    b.add_weights_offset(offset);
    b.add_weights_bytes(bytes);
    if (!strings.IsNull()) b.add_strings(strings);
    return b.Finish();
  }

  Offset<flatbuffers::Vector<Offset<fb::Dim>>> shape(const Shape& s) {
    std::vector<Offset<fb::Dim>> dims;
    for (const Dim& d : s.dims())
      dims.push_back(fb::CreateDim(fbb, d.value(), d.isSymbol() ? fbb.CreateString(d.symbolName()) : 0));
    return fbb.CreateVector(dims);
  }

  Offset<fb::Tensor> tensor(const Tensor& t) {
    auto dims = shape(t.shape);
    if (t.isConstant()) return constantTensor(t.name, t.dtype, *t.constant, uint8_t(t.kind), dims, t.shape.hasRank());
    return fb::CreateTensor(fbb, fbb.CreateString(t.name), uint8_t(t.dtype), uint8_t(t.kind), t.shape.hasRank(),
                            dims);
  }

  Offset<fb::Attribute> attribute(const std::string& name, const Attribute& a) {
    auto n = fbb.CreateString(name);
    const auto& v = a.value();
    switch (v.index()) {
      case 0: return fb::CreateAttribute(fbb, n, 0, std::get<int64_t>(v));
      case 1: return fb::CreateAttribute(fbb, n, 1, 0, std::get<float>(v));
      case 2: return fb::CreateAttribute(fbb, n, 2, 0, 0, fbb.CreateString(std::get<std::string>(v)));
      case 3: return fb::CreateAttribute(fbb, n, 3, 0, 0, 0, fbb.CreateVector(std::get<std::vector<int64_t>>(v)));
      case 4:
        return fb::CreateAttribute(fbb, n, 4, 0, 0, 0, 0, fbb.CreateVector(std::get<std::vector<float>>(v)));
      case 5:
        return fb::CreateAttribute(fbb, n, 5, 0, 0, 0, 0, 0,
                                   fbb.CreateVectorOfStrings(std::get<std::vector<std::string>>(v)));
      case 6: {
        const auto& t = std::get<HostTensor>(v);
        auto tensorOffset = constantTensor("", t.dtype(), t, 0, 0, true);
        return fb::CreateAttribute(fbb, n, 6, 0, 0, 0, 0, 0, 0, tensorOffset);
      }
      case 7: {
        std::vector<Offset<fb::Graph>> gs{graph(*std::get<Attribute::Graph>(v))};
        return fb::CreateAttribute(fbb, n, 7, 0, 0, 0, 0, 0, 0, 0, fbb.CreateVector(gs));
      }
      case 8: {
        std::vector<Offset<fb::Graph>> gs;
        for (const auto& g : std::get<std::vector<Attribute::Graph>>(v)) gs.push_back(graph(*g));
        return fb::CreateAttribute(fbb, n, 8, 0, 0, 0, 0, 0, 0, 0, fbb.CreateVector(gs));
      }
    }
    throw Error(ErrorCode::kInternal, "attribute '" + name + "' has a kind the plan writer does not know");
  }

  Offset<fb::Layer> layer(const Layer& l, const PlannedLayer* p) {
    std::vector<Offset<fb::Attribute>> attrs;
    for (const auto& [k, a] : l.attributes) attrs.push_back(attribute(k, a));
    auto name = fbb.CreateString(l.name), op = fbb.CreateString(l.opType), domain = fbb.CreateString(l.domain);
    auto inputs = fbb.CreateVectorOfStrings(l.inputs), outputs = fbb.CreateVectorOfStrings(l.outputs);
    auto attributes = fbb.CreateVector(attrs);
    auto origins = fbb.CreateVectorOfStrings(l.origins);
    if (!p) return fb::CreateLayer(fbb, name, op, domain, l.opsetVersion, inputs, outputs, attributes, origins);
    std::vector<uint8_t> formats;
    for (TensorFormat f : p->inputFormats) formats.push_back(uint8_t(f));
    return fb::CreateLayer(fbb, name, op, domain, l.opsetVersion, inputs, outputs, attributes, origins,
                           uint8_t(p->precision), fbb.CreateString(p->tactic), fbb.CreateString(p->backend),
                           fbb.CreateVector(p->tacticPayload), fbb.CreateVector(formats), uint8_t(p->outputFormat),
                           p->workspaceBytes, uint8_t(p->role), uint8_t(p->phase),
                           fbb.CreateString(p->dataDependentShape), fbb.CreateString(p->fallbackReason),
                           fbb.CreateVectorOfStrings(p->implicitInputs));
  }
};

}  // namespace

std::vector<uint8_t> writePlan(const EnginePlan& d) {
  PlanSerializer s;
  auto& fbb = s.fbb;
  auto graph = s.graph(*d.network, &d.layers);
  std::vector<Offset<fb::Profile>> profiles;
  for (const auto& p : d.profiles) {
    std::vector<Offset<fb::ShapeRange>> ranges;
    for (const auto& [input, r] : p.inputs)
      ranges.push_back(fb::CreateShapeRange(fbb, fbb.CreateString(input), fbb.CreateVector(r.min),
                                            fbb.CreateVector(r.opt), fbb.CreateVector(r.max)));
    profiles.push_back(fb::CreateProfile(fbb, fbb.CreateVector(ranges)));
  }
  std::vector<Offset<fb::TensorPlacement>> placements;
  for (const auto& [name, t] : d.tensors)
    placements.push_back(fb::CreateTensorPlacement(fbb, fbb.CreateString(name), uint8_t(t.storage), uint8_t(t.format),
                                                   uint8_t(t.space), fbb.CreateString(t.modelTensor), t.converted));
  std::vector<Offset<fb::MemoryPlan>> memory;
  for (const auto& m : d.memory) {
    std::vector<Offset<fb::MemoryAssignment>> assignments;
    for (const auto& a : m.assignments)
      assignments.push_back(fb::CreateMemoryAssignment(fbb, fbb.CreateString(a.tensor), a.offset, a.bytes));
    memory.push_back(fb::CreateMemoryPlan(fbb, uint8_t(m.space), fbb.CreateVector(assignments), m.arenaBytes, m.naiveBytes));
  }
  auto root = fb::CreatePlan(fbb, fbb.CreateString(d.info.kilnVersion), fbb.CreateString(d.info.backend),
                             fbb.CreateString(d.info.deviceName), fbb.CreateString(d.info.computeCapability),
                             fbb.CreateString(d.info.buildFlags), graph, fbb.CreateVector(profiles),
                             fbb.CreateVector(placements), fbb.CreateVector(memory),
                             fbb.CreateString(d.report.toJson(-1)), d.info.worldSize, d.info.rank);
  fbb.Finish(root);

  PlanHeader header{};
  std::memcpy(header.magic, kPlanMagic, 8);
  header.formatVersion = kPlanFormatVersion;
  header.headerBytes = sizeof(PlanHeader);
  header.metadataOffset = sizeof(PlanHeader);
  header.metadataBytes = fbb.GetSize();
  header.weightsOffset = (header.metadataOffset + header.metadataBytes + kPlanAlignment - 1) / kPlanAlignment *
                         kPlanAlignment;
  header.weightsBytes = s.weights.size();
  std::vector<uint8_t> out(header.weightsOffset + header.weightsBytes, 0);
  std::memcpy(out.data() + header.metadataOffset, fbb.GetBufferPointer(), header.metadataBytes);
  if (!s.weights.empty()) std::memcpy(out.data() + header.weightsOffset, s.weights.data(), s.weights.size());
  header.checksum = planChecksum(out.data() + sizeof(PlanHeader), out.size() - sizeof(PlanHeader));
  std::memcpy(out.data(), &header, sizeof header);
  return out;
}

}  // namespace kiln
