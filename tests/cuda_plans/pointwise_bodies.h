#pragma once
// Pointwise bodies built by hand for the NVRTC tests (pointwise_nvrtc_test.cpp,
// pointwise_host_run_test.cpp): a kiln.Pointwise "body" graph, typed as the CUDA step types it.
#include "runtime/precision_convert.h"

#include <kiln/network.h>
#include <kiln/shape.h>

#include <map>
#include <string>
#include <vector>

namespace kiln::test {

class BodyBuilder {
 public:
  BodyBuilder& input(const std::string& name, std::vector<int64_t> dims, DataType type = DataType::kFloat32) {
    net_.addInput(name, type, Shape::fromDims(dims));
    return *this;
  }
  BodyBuilder& constant(const std::string& name, HostTensor value) {
    net_.addConstant(name, std::move(value));
    return *this;
  }
  BodyBuilder& layer(const std::string& op, std::vector<std::string> inputs, const std::string& output,
                     std::map<std::string, Attribute> attributes = {}, int64_t opset = 17) {
    Layer l;
    l.name = output + "_" + op;
    l.opType = op;
    l.opsetVersion = opset;
    l.inputs = std::move(inputs);
    l.outputs = {output};
    l.attributes = std::move(attributes);
    net_.addLayer(std::move(l));
    return *this;
  }
  // The body as the step types it for a precision storing float32 as `storage`: every float32
  // tensor and constant narrowed.
  Network done(const std::string& output, DataType storage = DataType::kFloat32) const {
    Network net = net_;
    net.markOutput(output);
    net.inferShapes();
    for (const std::string& name : net.tensorNames()) {
      Tensor& t = net.tensor(name);
      if (t.dtype != DataType::kFloat32 || storage == DataType::kFloat32) continue;
      if (t.constant) t.constant = narrowInPlace(t.constant->clone(), storage);  // the builder keeps its own
      t.dtype = storage;
    }
    return net;
  }

 private:
  Network net_;
};

// A constant vector of alternating signs, never zero.
inline HostTensor ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = (i % 2 ? -0.1f : 0.1f) * float(i + 1);
  return HostTensor::fromVector<float>({n}, v);
}

// x * sigmoid(x) + y, GELU's tanh form, HardSwish, a scalar and a [width] bias: x [rows, width],
// y [width]; its output is "out".
inline BodyBuilder swishGeluHardSwishBody(int64_t rows, int64_t width) {
  return BodyBuilder()
      .input("x", {rows, width})
      .input("y", {width})
      .constant("k", HostTensor::scalar<float>(1.25f))
      .constant("bias", ramp(width))
      .layer("Sigmoid", {"x"}, "s")
      .layer("Mul", {"x", "s"}, "swish")
      .layer("Add", {"swish", "y"}, "sum")
      .layer("Gelu", {"sum"}, "gelu", {{"approximate", std::string("tanh")}}, 20)
      .layer("HardSwish", {"gelu"}, "hs")
      .layer("Mul", {"hs", "k"}, "scaled")
      .layer("Add", {"scaled", "bias"}, "out");
}

}  // namespace kiln::test
