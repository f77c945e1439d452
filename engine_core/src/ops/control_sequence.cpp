// Type and shape inference for the control_sequence op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerControlSequenceSchemas(OpSchemaRegistry& registry) { (void)registry; }

}  // namespace kiln
