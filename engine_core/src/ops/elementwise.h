#pragma once
// Shared pieces of the elementwise op family's schemas (elementwise*.cpp) and CPU kernels
// (backends/cpu/ops/elementwise*.cpp).
#include "op_schema.h"

#include <string>
#include <vector>

namespace kiln {

class OpSchemaRegistry;

void registerElementwiseBinarySchemas(OpSchemaRegistry& registry);
void registerElementwiseUnarySchemas(OpSchemaRegistry& registry);
void registerElementwiseCastSchemas(OpSchemaRegistry& registry);

// Element type classes an op accepts (ONNX type constraints), as a bit set.
enum TypeClass : unsigned {
  kFloatTypes = 1u << 0,  // float32, float64, float16, bfloat16
  kSignedIntegerTypes = 1u << 1,
  kUnsignedIntegerTypes = 1u << 2,
  kBoolType = 1u << 3,
  kStringType = 1u << 4,
  kIntegerTypes = kSignedIntegerTypes | kUnsignedIntegerTypes,
  kNumericTypes = kFloatTypes | kIntegerTypes,
  kSignedNumericTypes = kFloatTypes | kSignedIntegerTypes,
};

bool isInTypeClasses(DataType type, unsigned classes);
// Fails naming the input, its type and the accepted ones when input i's type is not in `classes`.
void requireInputType(const InferenceContext& ctx, size_t i, unsigned classes);
// Fails unless inputs first..last (those present) share input first's type.
void requireSameInputTypes(const InferenceContext& ctx, size_t first, size_t last);

// Binary ops before opset 7 broadcast B only with broadcast=1, lining B's dims up with A's from
// `axis` (default: A's trailing dims). Padding B with trailing 1s makes numpy broadcasting line
// them up the same way; B's dims are returned unchanged otherwise.
// PRelu before opset 7 had no broadcasting rule at all; its exporters (PyTorch) gave a 1-D slope
// [C] per channel of X [N, C, ...], which the same padding lines up with axis 1.
template <class D>
std::vector<D> alignLegacyBroadcast(const Layer& layer, size_t rankA, std::vector<D> dimsB) {
  if (layer.opType == "PRelu" && layer.domain.empty()) {
    if (layer.opsetVersion < 7 && dimsB.size() == 1 && rankA > 2) dimsB.resize(rankA - 1, D(1));
    return dimsB;
  }
  if (layer.opsetVersion >= 7 || layer.attrInt("broadcast", 0) == 0) return dimsB;
  const int64_t rankB = int64_t(dimsB.size());
  int64_t axis = layer.attrInt("axis", int64_t(rankA) - rankB);
  if (axis < 0) axis += int64_t(rankA);
  for (int64_t pad = int64_t(rankA) - axis - rankB; pad > 0; --pad) dimsB.push_back(D(1));
  return dimsB;
}

}  // namespace kiln
