#include "function_expansion.h"

#include "tensor_proto.h"

#include <kiln/error.h>

#include <onnx/defs/schema.h>

#include <unordered_map>

namespace kiln::onnx_import {

std::vector<onnx::NodeProto> inlineFunction(const onnx::NodeProto& call, const std::string& callName,
                                            const onnx::FunctionProto& fn) {
  std::unordered_map<std::string, std::string> rename;
  for (int i = 0; i < fn.input_size(); ++i) rename[fn.input(i)] = i < call.input_size() ? call.input(i) : "";
  for (int i = 0; i < fn.output_size(); ++i) rename[fn.output(i)] = i < call.output_size() ? call.output(i) : "";
  std::unordered_map<std::string, const onnx::AttributeProto*> callAttrs;
  for (const auto& a : call.attribute()) callAttrs[a.name()] = &a;
  auto mapped = [&](const std::string& n) {
    if (n.empty()) return n;
    auto it = rename.find(n);
    if (it != rename.end()) return it->second;
    std::string fresh = callName + "/" + n;  // internal tensor: private to this call
    rename[n] = fresh;
    return fresh;
  };
  std::vector<onnx::NodeProto> nodes;
  int index = 0;
  for (const auto& src : fn.node()) {
    onnx::NodeProto n = src;
    n.set_name(callName + "/" + (src.name().empty() ? src.op_type() + "_" + std::to_string(index) : src.name()));
    ++index;
    for (int i = 0; i < n.input_size(); ++i) n.set_input(i, mapped(src.input(i)));
    for (int i = 0; i < n.output_size(); ++i) n.set_output(i, mapped(src.output(i)));
    n.clear_attribute();
    for (const auto& a : src.attribute()) {
      if (a.ref_attr_name().empty()) {
        *n.add_attribute() = a;
        continue;
      }
      auto it = callAttrs.find(a.ref_attr_name());
      if (it == callAttrs.end()) continue;  // not given by the caller: the op's default applies
      onnx::AttributeProto copy = *it->second;
      copy.set_name(a.name());
      *n.add_attribute() = copy;
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

std::optional<ExpandedFunction> expandStandardFunction(const onnx::NodeProto& node, const std::string& name,
                                                       int64_t opsetVersion,
                                                       const std::vector<onnx::TypeProto>& inputTypes) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), int(opsetVersion), node.domain());
  if (!schema) return std::nullopt;
  onnx::FunctionProto body;
  if (schema->HasFunction()) {
    body = *schema->GetFunction();
  } else if (schema->HasContextDependentFunction()) {
    onnx::FunctionBodyBuildContextImpl context(node, inputTypes);
    try {
      if (!schema->BuildContextDependentFunction(context, body)) return std::nullopt;
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kUnsupported, "node '" + name + "' (" + node.op_type() +
                                               "): its ONNX function body could not be built: " + e.what());
    }
  } else {
    return std::nullopt;
  }
  ExpandedFunction out;
  out.nodes = inlineFunction(node, name, body);
  for (const auto& imp : body.opset_import())
    out.opsets[imp.domain() == "ai.onnx" ? "" : imp.domain()] = imp.version();
  if (!out.opsets.empty() && !out.opsets.count("")) out.opsets[""] = opsetVersion;
  return out;
}

std::vector<onnx::TypeProto> inputTypesFor(const Layer& layer, const Network& net) {
  std::vector<onnx::TypeProto> types;
  for (const auto& in : layer.inputs) {
    onnx::TypeProto t;
    const Tensor* tensor = in.empty() ? nullptr : net.findTensor(in);
    if (tensor && tensor->dtype != DataType::kUndefined) {
      auto* tt = t.mutable_tensor_type();
      tt->set_elem_type(toOnnxType(tensor->dtype));
      if (tensor->shape.hasRank()) {
        auto* shape = tt->mutable_shape();
        for (const Dim& d : tensor->shape.dims()) {
          auto* dim = shape->add_dim();
          if (d.isKnown()) dim->set_dim_value(d.value());
          else if (d.isSymbol()) dim->set_dim_param(d.symbolName());
        }
      }
    }
    types.push_back(std::move(t));
  }
  return types;
}

}  // namespace kiln::onnx_import
