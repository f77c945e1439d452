#pragma once
// Attributes that name an element type in ONNX's TensorProto.DataType numbering (SequenceEmpty and
// the random ops' `dtype`, the window ops' `output_datatype`, ...).
#include "op_schema.h"

namespace kiln {

// The attribute's type, `fallback` when it is absent; fails naming the node when it is not a type
// Kiln supports.
DataType onnxDataTypeAttr(const InferenceContext& ctx, const std::string& attribute, DataType fallback);

}  // namespace kiln
