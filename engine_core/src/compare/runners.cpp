#include <kiln/reference_executor.h>
#include <kiln/runners.h>

namespace kiln {

Runner makeReferenceRunner(std::shared_ptr<const Network> network) {
  return [network](const std::map<std::string, HostTensor>& inputs, const TensorObserver& observer) {
    ReferenceExecutorOptions options;
    if (observer)
      options.afterLayer = [&](const Layer& layer, const std::vector<Value>& outputs, double) {
        for (size_t i = 0; i < outputs.size() && i < layer.outputs.size(); ++i)
          if (!layer.outputs[i].empty() && !outputs[i].isSequence() && outputs[i].hasElement &&
              !outputs[i].tensor.empty())
            observer(layer.outputs[i], layer.name, outputs[i].tensor);
      };
    ReferenceExecutor executor(network, options);
    ValueMap feeds(inputs.begin(), inputs.end());
    std::map<std::string, HostTensor> out;
    for (auto& [name, value] : executor.run(feeds))
      if (!value.isSequence() && value.hasElement) out[name] = value.tensor;
    return out;
  };
}

Runner makeEngineRunner(std::shared_ptr<const Engine> engine) {
  return [engine](const std::map<std::string, HostTensor>& inputs, const TensorObserver& observer) {
    auto context = engine->createExecutionContext();
    if (observer) context->setTensorObserver(observer);
    return context->run(inputs);
  };
}

}  // namespace kiln
