// Type and shape inference for the recurrent op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerRecurrentSchemas(OpSchemaRegistry& registry) { (void)registry; }

}  // namespace kiln
