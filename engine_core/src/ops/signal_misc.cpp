// Type and shape inference for the signal_misc op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerSignalMiscSchemas(OpSchemaRegistry& registry) { (void)registry; }

}  // namespace kiln
