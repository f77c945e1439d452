// Type and shape inference for the reduction_softmax op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerReductionSoftmaxSchemas(OpSchemaRegistry& registry) { (void)registry; }

}  // namespace kiln
