#include "step_harness.h"

#include <kiln/error.h>

#include "ops/op_schema.h"

namespace kiln::test {

StandaloneStep::StandaloneStep(const Backend& backend, const Layer& layer, const Tactic& tactic,
                               const LayerWeights& weights, DataType dtype)
    : backend_(backend), layer_(layer) {
  LayerSignature signature;
  inputTensors_.resize(layer.inputs.size());
  outputTensors_.resize(layer.outputs.size());
  constant_.assign(layer.inputs.size(), false);
  for (size_t i = 0; i < layer.inputs.size(); ++i) {
    Tensor& t = inputTensors_[i];
    t.name = layer.inputs[i];
    t.dtype = dtype;
    if (i < weights.size() && weights[i]) {
      t.dtype = weights[i]->dtype();
      t.constant = *weights[i];
      t.shape = Shape::fromDims(weights[i]->dims());
      constant_[i] = true;
    }
    signature.inputs.push_back(layer.inputs[i].empty() ? nullptr : &t);
  }
  for (size_t i = 0; i < layer.outputs.size(); ++i) {
    outputTensors_[i].name = layer.outputs[i];
    outputTensors_[i].dtype = dtype;
    signature.outputs.push_back(layer.outputs[i].empty() ? nullptr : &outputTensors_[i]);
  }
  step_ = backend.instantiate(layer, tactic, signature);
}

StandaloneStep::Bound StandaloneStep::bind(const std::vector<const Value*>& inputs) const {
  Bound bound;
  std::vector<Tensor> described(inputs.size());
  std::vector<const Tensor*> types(inputs.size(), nullptr);
  std::vector<const HostTensor*> values(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorView view;
    if (inputs[i]) {
      const HostTensor& t = inputs[i]->tensor;
      described[i].name = layer_.inputs[i];
      described[i].dtype = t.dtype();
      described[i].shape = Shape::fromDims(t.dims());
      types[i] = &described[i];
      values[i] = &t;
      view.dtype = t.dtype();
      view.dims = t.dims();
      view.data = const_cast<void*>(t.rawData());
      view.isConstant = i < constant_.size() && constant_[i];
    }
    bound.inputs.push_back(view);
  }
  InferenceContext inference(layer_, types, values);
  OpSchemaRegistry::instance().find(layer_.domain, layer_.opType)->infer(inference);
  for (size_t i = 0; i < layer_.outputs.size(); ++i) {
    TensorView view;
    if (!layer_.outputs[i].empty()) {
      const Tensor& out = inference.output(i);
      bound.outputMemory.emplace_back(out.dtype, out.shape.knownDims());
      view.dtype = out.dtype;
      view.dims = out.shape.knownDims();
      view.data = bound.outputMemory.back().rawData();
    } else {
      bound.outputMemory.emplace_back();
    }
    bound.outputs.push_back(view);
  }
  return bound;
}

uint64_t StandaloneStep::workspaceBytes(const std::vector<const Value*>& inputs) const {
  Bound bound = bind(inputs);
  return step_->workspaceBytes(bound.inputs, bound.outputs);
}

std::vector<Value> StandaloneStep::enqueue(const std::vector<const Value*>& inputs, Stream& stream) const {
  Bound bound = bind(inputs);
  const uint64_t bytes = step_->workspaceBytes(bound.inputs, bound.outputs);
  DeviceBuffer workspace = allocateBuffer(backend_.allocator(), std::max<uint64_t>(bytes, 1), 64);
  auto state = step_->createState();
  StepArgs args;
  args.inputs = bound.inputs;
  args.outputs = bound.outputs;
  args.workspace = workspace.get();
  args.workspaceBytes = bytes;
  args.state = state.get();
  step_->enqueue(args, stream);
  stream.synchronize();
  std::vector<Value> outputs;
  for (HostTensor& t : bound.outputMemory) outputs.push_back(Value(std::move(t)));
  return outputs;
}

}  // namespace kiln::test
