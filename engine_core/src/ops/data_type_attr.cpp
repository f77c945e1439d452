#include "data_type_attr.h"

#include "../onnx/tensor_proto.h"

namespace kiln {

DataType onnxDataTypeAttr(const InferenceContext& ctx, const std::string& attribute, DataType fallback) {
  if (!ctx.layer().hasAttr(attribute)) return fallback;
  int64_t code = ctx.layer().attrInt(attribute);
  DataType type = onnx_import::fromOnnxType(int32_t(code), ctx.layer().describe() + ", attribute '" + attribute + "'");
  if (type == DataType::kUndefined) ctx.fail("attribute '" + attribute + "' must name a data type, got 0 (UNDEFINED)");
  return type;
}

}  // namespace kiln
