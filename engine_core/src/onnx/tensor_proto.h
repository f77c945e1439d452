#pragma once
// Conversions between ONNX TensorProto / TypeProto and Kiln's HostTensor / Tensor types.
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <onnx/onnx_pb.h>

#include <string>

namespace kiln::onnx_import {

// Maps ONNX TensorProto.DataType to Kiln (throws kUnsupported naming `what` for complex types etc).
DataType fromOnnxType(int32_t onnxType, const std::string& what);
int32_t toOnnxType(DataType type);

// Decodes a tensor, reading external data relative to `baseDir`. `what` names it in errors.
HostTensor tensorFromProto(const onnx::TensorProto& proto, const std::string& baseDir, const std::string& what);
HostTensor tensorFromSparseProto(const onnx::SparseTensorProto& proto, const std::string& baseDir,
                                 const std::string& what);
onnx::TensorProto tensorToProto(const HostTensor& tensor, const std::string& name);

// Fills dtype/shape/kind of `t` from an ONNX type (tensor, sequence of tensors, optional).
void applyTypeProto(const onnx::TypeProto& type, Tensor& t);

}  // namespace kiln::onnx_import
