#pragma once
// Q/DQ propagation, the first half of passes/fuse_qdq.cpp (TensorRT's rules): a Q/DQ model
// quantizes the inputs of its Conv / MatMul layers, and between a DequantizeLinear and the layer
// that can use it, or a QuantizeLinear and the layer whose output it could be, often sit ops that
// only move or pick values (MaxPool, Reshape, Transpose, ...). Those commute with a per-tensor
// quantization exactly, op(DQ(q)) = DQ(op(q)) and Q(op(x)) = op(Q(x)), so the DequantizeLinear
// moves after them, the QuantizeLinear before them (when it then follows an int8-capable layer),
// and a DequantizeLinear -> QuantizeLinear with equal scales and zero points, the identity on the
// int8 values, disappears.
#include "pass.h"

#include <map>
#include <string>

namespace kiln::passes {

// Whether `layer` commutes with a per-tensor quantization of its input 0 (see above).
bool commutesWithQuantization(const Layer& layer);

// Makes one propagation rewrite; false when none applies. `removed` gets, per ONNX node that a
// dropped identity took away, how it went.
bool propagateQdqOnce(Network& network, PassContext& context, std::map<std::string, std::string>& removed);

}  // namespace kiln::passes
