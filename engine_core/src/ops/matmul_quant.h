#pragma once
// Pieces of the matmul_quant family shared between its schema files.
#include "op_schema.h"

namespace kiln {

// Output shape of MatMul-like products (NumPy matmul rules: 1-D operands, broadcast batch dims).
Shape inferMatMulShape(const InferenceContext& ctx, const Shape& a, const Shape& b);

void registerEinsumSchema(OpSchemaRegistry& registry);
void registerQuantizeSchemas(OpSchemaRegistry& registry);

}  // namespace kiln
