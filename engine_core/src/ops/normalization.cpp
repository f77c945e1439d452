// Type and shape inference for the normalization op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerNormalizationSchemas(OpSchemaRegistry& registry) { (void)registry; }

}  // namespace kiln
