#pragma once
// The graph IR: named tensors and the layers between them. Built by OnnxImporter or by code, changed
// by passes, consumed by the builder and the reference executor.
#include <kiln/data_type.h>
#include <kiln/host_tensor.h>
#include <kiln/shape.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace kiln {

class Network;

// A value flowing through the network.
struct Tensor {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Shape shape;
  ValueKind kind = ValueKind::kTensor;
  std::optional<HostTensor> constant;  // set for initializers / weights
  bool isConstant() const { return constant.has_value(); }
};

// A layer attribute (ONNX attribute kinds).
class Attribute {
 public:
  using Graph = std::shared_ptr<const Network>;
  using Storage = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, HostTensor, Graph, std::vector<Graph>>;
  Attribute() = default;
  template <class T>
  Attribute(T value) : value_(std::move(value)) {}  // NOLINT: reads naturally at call sites
  const Storage& value() const { return value_; }
  template <class T>
  const T* get() const {
    return std::get_if<T>(&value_);
  }
  std::string_view typeName() const;  // "int", "float", "ints", "graph", ...

 private:
  Storage value_;
};

struct Layer {
  std::string name;
  std::string opType;
  std::string domain;     // "" is the default ONNX domain (ai.onnx)
  int64_t opsetVersion = 0;  // the opset of `domain` the layer was written against
  std::vector<std::string> inputs;   // tensor names; "" marks an omitted optional input
  std::vector<std::string> outputs;  // tensor names; "" marks an unused optional output
  std::map<std::string, Attribute> attributes;
  std::vector<std::string> origins;  // names of the ONNX nodes this layer came from

  bool hasAttr(const std::string& key) const { return attributes.count(key) != 0; }
  // Typed attribute access; throws kiln::Error naming the layer when the type is wrong.
  int64_t attrInt(const std::string& key, int64_t fallback) const;
  int64_t attrInt(const std::string& key) const;
  float attrFloat(const std::string& key, float fallback) const;
  float attrFloat(const std::string& key) const;
  std::string attrString(const std::string& key, const std::string& fallback) const;
  std::string attrString(const std::string& key) const;
  std::vector<int64_t> attrInts(const std::string& key, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attrFloats(const std::string& key, std::vector<float> fallback = {}) const;
  std::vector<std::string> attrStrings(const std::string& key) const;
  const HostTensor& attrTensor(const std::string& key) const;
  const Network& attrGraph(const std::string& key) const;

  size_t inputCount() const { return inputs.size(); }
  bool hasInput(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  bool hasOutput(size_t i) const { return i < outputs.size() && !outputs[i].empty(); }
  std::string describe() const;  // "node 'conv1' (Conv, opset 13)"
};

struct ModelInfo {
  std::string producerName, producerVersion, domain, docString, graphName;
  int64_t irVersion = 0, modelVersion = 0;
  std::map<std::string, int64_t> opsetImports;  // domain -> version ("" = ai.onnx)
  std::map<std::string, std::string> metadata;
  std::vector<std::string> importWarnings;  // problems a lenient import let through
};

class Network {
 public:
  Network() = default;

  // --- building ---
  Tensor& addInput(const std::string& name, DataType dtype, Shape shape, ValueKind kind = ValueKind::kTensor);
  Tensor& addConstant(const std::string& name, HostTensor value);
  // Adds (or returns) an intermediate tensor entry; its type is filled by shape inference.
  Tensor& addTensor(const std::string& name);
  Layer& addLayer(Layer layer);
  void markOutput(const std::string& name);

  // --- reading ---
  const std::vector<std::string>& inputs() const { return inputs_; }
  const std::vector<std::string>& outputs() const { return outputs_; }
  const std::vector<Layer>& layers() const { return layers_; }
  std::vector<Layer>& layers() { return layers_; }
  const Tensor* findTensor(const std::string& name) const;
  Tensor* findTensor(const std::string& name);
  const Tensor& tensor(const std::string& name) const;  // throws when absent
  Tensor& tensor(const std::string& name);
  const std::vector<std::string>& tensorNames() const { return tensorOrder_; }
  ModelInfo& info() { return info_; }
  const ModelInfo& info() const { return info_; }
  // Graph inputs that are not constants (initializers may be listed as inputs in old ONNX files).
  std::vector<std::string> runtimeInputs() const;

  // --- structure ---
  // Checks names: every layer input is produced, a graph input, a constant or (for subgraphs) in
  // `outerScope`; no tensor has two producers; no cycles. Throws kiln::Error naming the problem.
  void validate(const std::vector<std::string>& outerScope = {}) const;
  // Layer indices in an order where producers come before consumers (throws on a cycle).
  std::vector<size_t> topologicalOrder() const;
  // Fills dtype/shape of every produced tensor from the op schemas. `outerScope` resolves names a
  // subgraph reads from its enclosing graph.
  using ScopeLookup = std::function<const Tensor*(const std::string&)>;
  void inferShapes(const ScopeLookup& outerScope = {});
  // The same for one layer, whose inputs must already be typed. `valuesRead` (when given) gets, per
  // input, whether the inference asked for its value (shape-tensor inputs such as Reshape's shape).
  void inferLayer(size_t layerIndex, const ScopeLookup& outerScope = {}, std::vector<bool>* valuesRead = nullptr);
  // Puts the layers in an order where producers come before consumers (topologicalOrder's).
  void sortLayersTopologically();
  // Names of tensors used inside subgraphs but defined outside them.
  std::vector<std::string> outerScopeReferences() const;
  void removeUnusedTensors();

  int64_t parameterCount() const;  // elements in constants
  int64_t parameterBytes() const;

 private:
  std::vector<std::string> inputs_, outputs_;
  std::vector<Layer> layers_;
  std::unordered_map<std::string, Tensor> tensors_;
  std::vector<std::string> tensorOrder_;
  ModelInfo info_;
};

}  // namespace kiln
