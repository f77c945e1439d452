#pragma once
// Op schemas: for each supported (domain, op type) the type and shape inference that the IR runs.
// One op family a file (elementwise.cpp, conv_pool.cpp, ...); each file has a register function
// listed in op_families.h.
#include <kiln/error.h>
#include <kiln/network.h>

#include "../common/registry.h"

#include <functional>
#include <string>
#include <unordered_map>

namespace kiln {

// What an inference function sees of one layer: its inputs' types and, where known (constants at
// build time, every value at run time), their values.
class InferenceContext {
 public:
  InferenceContext(const Layer& layer, std::vector<const Tensor*> inputs,
                   std::vector<const HostTensor*> inputValues, Network::ScopeLookup scope = {});
  // Values fetched when the inference asks for them (the shape phase computes them on demand).
  using ValueProvider = std::function<const HostTensor*(size_t input)>;
  InferenceContext(const Layer& layer, std::vector<const Tensor*> inputs, ValueProvider values,
                   Network::ScopeLookup scope = {});

  const Layer& layer() const { return layer_; }
  int64_t opset() const { return layer_.opsetVersion; }
  size_t inputCount() const { return inputs_.size(); }
  size_t outputCount() const { return layer_.outputs.size(); }
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& input(size_t i) const;  // throws naming the layer when absent
  DataType inputType(size_t i) const { return input(i).dtype; }
  const Shape& inputShape(size_t i) const { return input(i).shape; }
  // The value of input i when it is known now, else nullptr. Asking marks the input as one whose
  // value decides the output types (valueRequested), which the builder uses to find the tensors
  // the shape phase must compute.
  const HostTensor* inputValue(size_t i) const;
  bool valueRequested(size_t i) const { return i < requested_.size() && requested_[i]; }
  // Names visible to the layer's subgraph attributes (its graph and the graphs around it), for
  // inferring If/Loop/Scan bodies; empty when the caller gave no scope.
  const Network::ScopeLookup& scope() const { return scope_; }

  void setOutput(size_t i, DataType dtype, Shape shape, ValueKind kind = ValueKind::kTensor);
  const Tensor& output(size_t i) const { return outputs_.at(i); }
  const std::vector<Tensor>& outputs() const { return outputs_; }

  // Throws kiln::Error(kInvalidModel) naming the layer, e.g. fail("input 1 must be rank 2").
  [[noreturn]] void fail(const std::string& why) const;
  // Normalises a possibly negative axis against `rank`, failing with a clear message.
  int64_t normalizeAxis(int64_t axis, int64_t rank, const char* what = "axis") const;

 private:
  const Layer& layer_;
  std::vector<const Tensor*> inputs_;
  ValueProvider values_;
  mutable std::vector<bool> requested_;
  Network::ScopeLookup scope_;
  std::vector<Tensor> outputs_;
};

// `axis` (-rank <= axis < rank) as a dim index; throws kiln::Error(kInvalidModel) naming the layer
// (and `what`) when out of range. Shared by the schemas and the backends' kernels.
int64_t normalizeAxis(const Layer& layer, int64_t axis, int64_t rank, const char* what = "axis");

using InferFn = std::function<void(InferenceContext&)>;

struct OpSchema {
  std::string domain;  // "" for ai.onnx
  std::string opType;
  InferFn infer;
  int minInputs = 0;
  int maxInputs = -1;  // -1: variadic
};

class OpSchemaRegistry {
 public:
  static const OpSchemaRegistry& instance();
  const OpSchema* find(const std::string& domain, const std::string& opType) const {
    return schemas_.find(domain, opType);
  }
  void add(OpSchema schema) {
    const std::string domain = schema.domain, opType = schema.opType;
    schemas_.add(domain, opType, std::move(schema));
  }
  std::vector<const OpSchema*> all() const { return schemas_.all(); }

 private:
  OpRegistry<OpSchema> schemas_;
};

// Shared inference helpers used by many families.
Shape broadcastShapes(const InferenceContext& ctx, const Shape& a, const Shape& b);
void inferSameAsInput(InferenceContext& ctx);            // output 0 = input 0's type and shape
void inferBroadcastSameType(InferenceContext& ctx);       // output 0 = broadcast of all inputs, type of input 0
void inferBroadcastBool(InferenceContext& ctx);           // comparisons: broadcast shape, bool

}  // namespace kiln
