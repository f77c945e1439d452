#include "qdq_propagation.h"

#include "graph_utils.h"
#include "int8_layer_form.h"
#include "qdq_params.h"

#include <set>

namespace kiln::passes {
namespace {

bool layerNamed(const Network& network, const std::string& name) {
  for (const Layer& l : network.layers())
    if (l.name == name) return true;
  return false;
}

std::string uniqueLayerName(const Network& network, const std::string& base) {
  std::string name = base;
  for (int suffix = 1; layerNamed(network, name); ++suffix) name = base + "_" + std::to_string(suffix);
  return name;
}

// A new tensor of `type` and `shape`'s shape, named after `base`.
std::string addTensorLike(Network& network, const std::string& base, DataType type, const std::string& shapeOf) {
  const std::string name = uniqueTensorName(network, base);
  Tensor& t = network.addTensor(name);
  t.dtype = type;
  t.shape = network.tensor(shapeOf).shape;
  return name;
}

bool perTensorParams(const Network& network, const Layer& qdq, QdqParams& params) {
  return readQdqParams(network, qdq, params).empty() && params.perTensor();
}

std::string describe(const Layer& l) { return l.opType + " '" + l.name + "'"; }

// Whether `op` may run on the quantized values of `params`: MaxPool has no fp8 kernel, so fp8
// values are dequantized before it.
bool commutesWith(const Layer& op, const QdqParams& params) {
  return commutesWithQuantization(op) && !(params.type == DataType::kFloat8E4M3 && op.opType == "MaxPool");
}

// DQ(q) -> op  becomes  op(q) -> DQ: the op runs on the 8-bit values and the DequantizeLinear
// (a copy of it when others read it too) follows, writing the op's old output.
bool moveDequantizeForward(Network& network, const GraphIndex& index, PassContext& context) {
  for (size_t d = 0; d < network.layers().size(); ++d) {
    const Layer dq = network.layers()[d];
    QdqParams params;
    if (!isDequantizeLinear(dq) || !perTensorParams(network, dq, params)) continue;
    for (size_t r : index.consumers(dq.outputs[0])) {
      const Layer op = network.layers()[r];
      if (!commutesWith(op, params) || op.inputs[0] != dq.outputs[0]) continue;
      Layer moved = op;
      moved.inputs[0] = dq.inputs[0];
      if (!context.supports(moved)) continue;
      moved.outputs = {addTensorLike(network, op.outputs[0] + ":quantized", params.type, op.outputs[0])};
      Layer after = dq;
      after.name = uniqueLayerName(network, dq.name + "/after/" + op.name);
      after.inputs[0] = moved.outputs[0];
      after.outputs = {op.outputs[0]};
      network.layers()[r] = std::move(moved);
      network.layers().insert(network.layers().begin() + std::ptrdiff_t(r) + 1, std::move(after));
      context.note("moved DequantizeLinear '" + dq.name + "' after " + describe(op) + " (it commutes)");
      return true;
    }
  }
  return false;
}

// x -> op -> Q  becomes  x -> Q -> op, when x comes from a layer that may take the QuantizeLinear
// as its output quantization (an int8-capable layer, or another op it can move over).
bool moveQuantizeBackward(Network& network, const GraphIndex& index, PassContext& context) {
  for (size_t q = 0; q < network.layers().size(); ++q) {
    const Layer quantize = network.layers()[q];
    QdqParams params;
    if (!isQuantizeLinear(quantize) || !perTensorParams(network, quantize, params)) continue;
    const auto o = index.producer(quantize.inputs[0]);
    if (!o || !index.onlyConsumerIs(quantize.inputs[0], q)) continue;
    const Layer op = network.layers()[*o];
    if (!commutesWith(op, params) || op.outputs[0] != quantize.inputs[0]) continue;
    const std::string& x = op.inputs[0];
    const auto p = index.producer(x);
    if (!p || !index.onlyConsumerIs(x, *o)) continue;
    const Layer& producer = network.layers()[*p];
    if (!int8FormOf(producer) && !commutesWith(producer, params)) continue;
    const Tensor* xTensor = network.findTensor(x);
    if (!xTensor || xTensor->dtype != DataType::kFloat32) continue;
    Layer movedOp = op;
    if (!context.supports(movedOp)) continue;
    Layer movedQuantize = quantize;
    movedQuantize.inputs[0] = x;
    movedQuantize.outputs = {addTensorLike(network, x + ":quantized", params.type, x)};
    movedOp.inputs[0] = movedQuantize.outputs[0];
    movedOp.outputs[0] = quantize.outputs[0];
    network.layers()[*o] = std::move(movedQuantize);
    network.layers()[q] = std::move(movedOp);
    context.note("moved QuantizeLinear '" + quantize.name + "' before " + describe(op) + " (it commutes)");
    return true;
  }
  return false;
}

// Q(DQ(q)) with the same type, scale and zero point is q again: readers of the QuantizeLinear read q.
bool dropRequantizeIdentity(Network& network, const GraphIndex& index, PassContext& context,
                            std::map<std::string, std::string>& removed) {
  for (size_t q = 0; q < network.layers().size(); ++q) {
    const Layer& quantize = network.layers()[q];
    if (!isQuantizeLinear(quantize) || index.isGraphOutput(quantize.outputs[0])) continue;
    const auto d = index.producer(quantize.inputs[0]);
    if (!d || !isDequantizeLinear(network.layers()[*d])) continue;
    const Layer& dequantize = network.layers()[*d];
    QdqParams in, out;
    if (!readQdqParams(network, dequantize, in).empty() || !readQdqParams(network, quantize, out).empty() ||
        !in.sameAs(out))
      continue;
    const std::string how = "DequantizeLinear '" + dequantize.name + "' -> QuantizeLinear '" + quantize.name +
                            "' with one scale and zero point: the identity on the quantized values, dropped";
    for (const auto& origin : quantize.origins) removed[origin] = how;
    if (index.onlyConsumerIs(quantize.inputs[0], q))
      for (const auto& origin : dequantize.origins) removed[origin] = how;
    context.note(how);
    replaceAllUses(network, quantize.outputs[0], dequantize.inputs[0]);
    eraseLayers(network, {q});
    return true;
  }
  return false;
}

}  // namespace

bool commutesWithQuantization(const Layer& layer) {
  static const std::set<std::string> ops = {"MaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
                                            "Identity"};
  if (!layer.domain.empty() || !ops.count(layer.opType) || !layer.hasInput(0) || !layer.hasOutput(0)) return false;
  return layer.outputs.size() == 1 || !layer.hasOutput(1);  // MaxPool's indices would change meaning
}

bool propagateQdqOnce(Network& network, PassContext& context, std::map<std::string, std::string>& removed) {
  GraphIndex index(network);
  return dropRequantizeIdentity(network, index, context, removed) ||
         moveDequantizeForward(network, index, context) || moveQuantizeBackward(network, index, context);
}

}  // namespace kiln::passes
