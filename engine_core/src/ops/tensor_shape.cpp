// Type and shape inference for the tensor_shape op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerTensorShapeSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "Identity", inferSameAsInput, 1, 1});
}

}  // namespace kiln
