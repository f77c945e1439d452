// Type and shape inference for the elementwise op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerElementwiseSchemas(OpSchemaRegistry& registry) { (void)registry; }

}  // namespace kiln
