// Type and shape inference for the tensor_shape op family. The ops are spread over
// tensor_shape_{views,copies,indexing,resize}.cpp; tensor_shape_common.h holds what they share with
// the CPU kernels.
#include "op_families.h"
#include "tensor_shape_common.h"

namespace kiln {

void registerTensorShapeSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "Identity", inferSameAsInput, 1, 1});
  tensor_shape::registerViewSchemas(registry);
  tensor_shape::registerCopySchemas(registry);
  tensor_shape::registerIndexingSchemas(registry);
  tensor_shape::registerResizeSchemas(registry);
}

}  // namespace kiln
