#pragma once
// Shared pieces of the control_sequence op family's inference (control flow, sequences, optionals).
#include "op_schema.h"

namespace kiln {

// Per dimension: equal dims stay, differing ones become unknown; different ranks give an unknown rank.
// Used where one value may take several shapes (If branches, loop-carried values, sequence items).
Shape mergeShapes(const Shape& a, const Shape& b);

void registerSequenceSchemas(OpSchemaRegistry& registry);
void registerControlFlowSchemas(OpSchemaRegistry& registry);

}  // namespace kiln
