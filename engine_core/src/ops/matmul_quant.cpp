// Type and shape inference for the matmul_quant op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerMatMulQuantSchemas(OpSchemaRegistry& registry) { (void)registry; }

}  // namespace kiln
