#include "int8_layer_form.h"

#include "../ops/quantized.h"

#include <cstring>
#include <vector>

namespace kiln::passes {
namespace {

bool isFused(const Layer& layer) { return layer.domain == fused::kDomain; }

}  // namespace

std::optional<Int8Form> int8FormOf(const Layer& layer) {
  if (isFused(layer) ? layer.opType != fused::kFusedConv && layer.opType != fused::kFusedMatMul : !layer.domain.empty())
    return std::nullopt;
  const std::string op = isFused(layer) ? layer.attrString(fused::kBase, "") : layer.opType;
  if (op == "Conv") return Int8Form::kConv;
  if (op == "ConvTranspose") return Int8Form::kConvTranspose;
  if (op == "MatMul") return Int8Form::kMatMul;
  if (op == "Gemm") return Int8Form::kGemm;
  return std::nullopt;
}

Layer int8BaseOf(const Layer& layer) { return isFused(layer) ? fused::baseLayer(layer) : layer; }

Layer quantizedLayerFor(const Layer& layer, Int8Form form, Precision precision) {
  Layer q;
  q.name = layer.name;
  q.domain = fused::kDomain;
  q.opsetVersion = layer.opsetVersion;
  q.outputs = layer.outputs;
  q.origins = layer.origins;
  if (form == Int8Form::kConv) {
    q.opType = quantized::kQuantizedConv;
    q.attributes = layer.attributes;
    q.attributes[fused::kBase] = std::string("Conv");
  } else {
    q.opType = quantized::kQuantizedMatMul;
    for (const char* key : {fused::kActivation, fused::kActivationAlpha, fused::kActivationBeta,
                            fused::kResidualBeforeActivation})
      if (auto it = layer.attributes.find(key); it != layer.attributes.end()) q.attributes[key] = it->second;
  }
  if (precision != Precision::kINT8) q.attributes[quantized::kPrecision] = std::string(toString(precision));
  return q;
}

HostTensor transposed(const HostTensor& m) {
  const int64_t rows = m.dim(0), columns = m.dim(1);
  const size_t size = byteSize(m.dtype());
  HostTensor t(m.dtype(), {columns, rows});
  const auto* in = static_cast<const uint8_t*>(m.rawData());
  auto* out = static_cast<uint8_t*>(t.rawData());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c) std::memcpy(out + (c * rows + r) * size, in + (r * columns + c) * size, size);
  return t;
}

std::string gemmBiasProblem(const HostTensor* c, int64_t columns) {
  if (!c || c->dtype() != DataType::kFloat32) return "its C is not a float32 constant";
  const bool perColumn =
      c->elementCount() == 1 || (c->elementCount() == columns && c->rank() >= 1 && c->dims().back() == columns);
  return perColumn ? "" : "its C is not one value per output column";
}

HostTensor gemmColumnBias(const HostTensor& c, float beta, int64_t columns) {
  std::vector<float> perColumn(static_cast<size_t>(columns));
  for (int64_t n = 0; n < columns; ++n) perColumn[size_t(n)] = beta * c.data<float>()[c.elementCount() == 1 ? 0 : n];
  return HostTensor::fromVector<float>({columns}, perColumn);
}

}  // namespace kiln::passes
