#pragma once
// Inlining of ONNX functions: model-local FunctionProtos and the function bodies ONNX defines for
// standard ops (e.g. Celu, MeanVarianceNormalization), used when Kiln has no kernel of its own.
#include <kiln/network.h>

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::onnx_import {

// The body of `fn` with its formal inputs/outputs bound to the call's, internal tensors renamed
// under the call's name, and attribute references (ref_attr_name) resolved.
std::vector<onnx::NodeProto> inlineFunction(const onnx::NodeProto& call, const std::string& callName,
                                            const onnx::FunctionProto& fn);

struct ExpandedFunction {
  std::vector<onnx::NodeProto> nodes;
  std::map<std::string, int64_t> opsets;  // the body's opset imports (empty: the caller's)
};

// Expands a standard op that ONNX defines as a function at `opsetVersion`; nullopt when ONNX has no
// function body for it.
std::optional<ExpandedFunction> expandStandardFunction(const onnx::NodeProto& node, const std::string& name,
                                                       int64_t opsetVersion,
                                                       const std::vector<onnx::TypeProto>& inputTypes);

// ONNX types of a layer's inputs as far as the network knows them (for context-dependent bodies).
std::vector<onnx::TypeProto> inputTypesFor(const Layer& layer, const Network& net);

}  // namespace kiln::onnx_import
