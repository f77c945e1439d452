// Type and shape inference for the conv_pool op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerConvPoolSchemas(OpSchemaRegistry& registry) { (void)registry; }

}  // namespace kiln
