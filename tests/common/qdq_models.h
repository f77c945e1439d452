#pragma once
// Q/DQ models as quantization toolkits write them, built in code through the ONNX protobuf API:
// onnxruntime.quantization's QDQ format (uint8 asymmetric activations, int8 weights per output
// channel, int32 biases), TensorRT / pytorch-quantization's (int8 symmetric with zero point 0,
// per tensor here) and an FP8 export's (opset 19 float8e4m3fn with zero point 0, scale amax / 448,
// float biases), as TensorRT Model Optimizer writes it.
#include "common/test_models.h"

#include <map>
#include <string>
#include <vector>

namespace kiln::test {

enum class QdqStyle { kOnnxRuntime, kSymmetricInt8, kFloat8 };

// Adds QuantizeLinear / DequantizeLinear nodes (and their initializers) to the model in `mb`.
class QdqWriter {
 public:
  QdqWriter(ModelBuilder& mb, QdqStyle style)
      : mb_(mb), style_(style), perChannelWeights_(style == QdqStyle::kOnnxRuntime) {}
  // Weights per output channel or per tensor (the style's default: per channel for ORT, per tensor
  // for the symmetric style; pytorch-quantization's default is symmetric per channel).
  QdqWriter& perChannelWeights(bool on) {
    perChannelWeights_ = on;
    return *this;
  }

  // tensor -> QuantizeLinear -> DequantizeLinear for values seen in [lo, hi] (ORT: uint8 with the
  // range's zero point; symmetric: int8, scale max(|lo|, |hi|) / 127; fp8: float8e4m3fn, scale
  // max(|lo|, |hi|) / 448). Returns the dequantized
  // tensor's name; the nodes are named tensor + "_QuantizeLinear" / "_DequantizeLinear".
  std::string activation(const std::string& tensor, float lo, float hi);
  // Float weights as an int8 (fp8 style: float8e4m3fn) initializer -> DequantizeLinear: per channel
  // along `axis` or per tensor (see perChannelWeights), scale amax / 127 (/ 448). Returns the
  // dequantized name.
  std::string weights(const std::string& name, const HostTensor& w, int64_t axis);
  // A float bias as int32 with scale x_scale * w_scale[c] -> DequantizeLinear; the fp8 style keeps
  // it a float initializer (its name is returned).
  std::string bias(const std::string& name, const HostTensor& b, const std::string& activation,
                   const std::string& weights);

  float scaleOf(const std::string& activation) const { return activationScales_.at(activation); }
  std::vector<std::string> nodes() const { return nodes_; }  // every Q/DQ node added

 private:
  onnx::NodeProto& add(const std::string& op, std::vector<std::string> inputs, const std::string& output,
                       const std::string& name);

  ModelBuilder& mb_;
  QdqStyle style_;
  bool perChannelWeights_;
  std::map<std::string, float> activationScales_;               // by the dequantized name
  std::map<std::string, std::vector<float>> weightScales_;      // by the dequantized name
  std::vector<std::string> nodes_;
};

// x [2,3,10,10] -> Conv+Relu -> MaxPool -> Conv -> Flatten -> Gemm(transB, C) -> y [2,5] with
// random weights, in float.
ModelBuilder floatCnn();
// The same CNN as `style` writes it: Q/DQ on the inputs of every quantized op (MaxPool's and
// Flatten's output keep their input's scale, as onnxruntime.quantization does), weights and int32
// biases through DequantizeLinear, activation ranges from the float CNN run on a random input.
// 16 Q/DQ nodes (their names go to `qdqNodes`) around 6 ops.
ModelBuilder qdqCnn(QdqStyle style, std::vector<std::string>* qdqNodes = nullptr);

}  // namespace kiln::test
