#pragma once
// Small pieces the agreement tests share when they build models and inputs.
#include <kiln/builder_config.h>
#include <kiln/host_tensor.h>

#include "common/test_models.h"
#include "onnx/tensor_proto.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::test {

// The precisions float ops are checked at: fp32, and fp16 (Cast layers around fp16 storage).
inline constexpr Precision kFloatPrecisions[] = {Precision::kFP32, Precision::kFP16};

// A TENSOR attribute (ConstantOfShape's value).
inline void setTensorAttr(onnx::NodeProto& node, const std::string& name, const HostTensor& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = onnx_import::tensorToProto(value, name);
}

// A STRINGS / FLOATS attribute (recurrent layers' activations and their parameters).
inline void setStrings(onnx::NodeProto& node, const std::string& name, const std::vector<std::string>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a->add_strings(v);
}

inline void setFloats(onnx::NodeProto& node, const std::string& name, const std::vector<float>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
}

inline HostTensor int64s(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  return HostTensor::fromVector<int64_t>(std::move(dims), values);
}

inline HostTensor int32s(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  return HostTensor::fromVector<int32_t>(std::move(dims), std::vector<int32_t>(values.begin(), values.end()));
}

// Appends the nodes of an activation the fusion passes fold into a fused layer, from `in` to `out`:
// "SiLU" as Sigmoid and Mul, "Clip" to [0, 6], "LeakyRelu" with alpha 0.2, else the op of that name.
inline void appendActivation(ModelBuilder& mb, const std::string& activation, const std::string& in,
                             const std::string& out) {
  if (activation == "SiLU") {
    mb.node("Sigmoid", {in}, {in + "_sigmoid"}, "sigmoid");
    mb.node("Mul", {in, in + "_sigmoid"}, {out}, "silu");
  } else if (activation == "Clip") {
    mb.initializer("lo", HostTensor::scalar<float>(0.0f)).initializer("hi", HostTensor::scalar<float>(6.0f));
    mb.node("Clip", {in, "lo", "hi"}, {out}, "clip");
  } else {
    auto& node = mb.node(activation, {in}, {out}, "act");
    if (activation == "LeakyRelu") ModelBuilder::setFloat(node, "alpha", 0.2f);
  }
}

}  // namespace kiln::test
