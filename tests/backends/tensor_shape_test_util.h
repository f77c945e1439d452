#pragma once
// Helpers for the tensor_shape op tests: run one ONNX node on the CPU reference executor, and the
// index arithmetic the naive reference loops use.
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include "common/test_models.h"
#include "onnx/tensor_proto.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace kiln::test {

// One node input: a runtime graph input, a constant (initializer), or omitted (empty name).
struct NodeInput {
  std::string name;
  HostTensor value;
  bool constant = false;
};

inline NodeInput given(const std::string& name, HostTensor value) { return {name, std::move(value), false}; }
inline NodeInput constant(const std::string& name, HostTensor value) { return {name, std::move(value), true}; }
inline NodeInput omitted() { return {"", HostTensor(), false}; }

using Attributes = std::function<void(onnx::NodeProto&)>;

inline std::shared_ptr<Network> singleNodeNetwork(const std::string& op, const std::vector<NodeInput>& inputs,
                                                  size_t outputs, const Attributes& attributes, int64_t opset) {
  ModelBuilder mb(opset);
  std::vector<std::string> names;
  for (const auto& in : inputs) {
    names.push_back(in.name);
    if (in.name.empty()) continue;
    if (in.constant) mb.initializer(in.name, in.value);
    else mb.input(in.name, onnx_import::toOnnxType(in.value.dtype()), in.value.dims());
  }
  std::vector<std::string> outNames;
  for (size_t i = 0; i < outputs; ++i) outNames.push_back("y" + std::to_string(i));
  auto& node = mb.node(op, names, outNames, "the_node");
  if (attributes) attributes(node);
  for (const auto& name : outNames) mb.output(name);
  return OnnxImporter().importBytes(mb.bytes());
}

// Runs `op` on the inputs; returns outputs y0, y1, ... as tensors.
inline std::vector<HostTensor> runNode(const std::string& op, const std::vector<NodeInput>& inputs,
                                       const Attributes& attributes = {}, size_t outputs = 1, int64_t opset = 17) {
  auto net = singleNodeNetwork(op, inputs, outputs, attributes, opset);
  ValueMap feeds;
  for (const auto& in : inputs)
    if (!in.name.empty() && !in.constant) feeds[in.name] = in.value;
  auto results = ReferenceExecutor(net).run(feeds);
  std::vector<HostTensor> out;
  for (size_t i = 0; i < outputs; ++i) out.push_back(results.at("y" + std::to_string(i)).tensor);
  return out;
}

inline HostTensor ints(std::vector<int64_t> dims, std::vector<int64_t> values) {
  return HostTensor::fromVector<int64_t>(std::move(dims), values);
}
inline HostTensor ints1d(std::vector<int64_t> values) {
  return HostTensor::fromVector<int64_t>({int64_t(values.size())}, values);
}

inline HostTensor randomInts(std::vector<int64_t> dims, uint32_t seed, int64_t lo, int64_t hi) {
  HostTensor t(DataType::kInt64, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  for (int64_t i = 0; i < t.elementCount(); ++i) t.data<int64_t>()[i] = dist(rng);
  return t;
}

inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = flat % dims[d];
    flat /= dims[d];
  }
  return index;
}

inline int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  int64_t flat = 0;
  for (size_t d = 0; d < dims.size(); ++d) flat = flat * dims[d] + index[d];
  return flat;
}

// Expects `call` to throw kiln::Error whose message contains every one of `parts`.
template <class Fn>
void expectErrorMentioning(Fn&& call, std::vector<std::string> parts) {
  try {
    call();
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& e) {
    std::string message = e.what();
    for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message << " lacks " << part;
  }
}

}  // namespace kiln::test
