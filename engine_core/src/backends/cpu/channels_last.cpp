#include "channels_last.h"

#include "../../ops/fused.h"
#include "../../runtime/subgraph_cache.h"
#include "cpu_kernel.h"

#include <algorithm>
#include <cstring>

namespace kiln {

std::unordered_map<std::string, TensorFormat> channelsLastTensors(const Network& network,
                                                                  const std::vector<std::string>& tactics,
                                                                  const std::vector<Precision>& precisions) {
  const auto& layers = network.layers();
  if (tactics.size() != layers.size() || precisions.size() != layers.size()) return {};
  if (std::any_of(layers.begin(), layers.end(), [](const Layer& l) { return hasSubgraphs(l); })) return {};
  const auto& registry = CpuKernelRegistry::instance();
  auto takesChannelsLast = [&](size_t i) {
    const CpuTactic* t = registry.findTactic(layers[i].domain, layers[i].opType, tactics[i]);
    return t && t->channelsLast;
  };
  std::unordered_map<std::string, std::vector<std::pair<size_t, size_t>>> readers;  // tensor -> (layer, input)
  for (size_t i = 0; i < layers.size(); ++i)
    for (size_t j = 0; j < layers[i].inputs.size(); ++j)
      if (!layers[i].inputs[j].empty()) readers[layers[i].inputs[j]].emplace_back(i, j);
  const auto& outputs = network.outputs();

  std::unordered_map<std::string, TensorFormat> formats;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!takesChannelsLast(i) || precisions[i] != Precision::kFP32 || layers[i].outputs.empty()) continue;
    const std::string& made = layers[i].outputs[0];
    const Tensor* tensor = made.empty() ? nullptr : network.findTensor(made);
    if (!tensor || tensor->dtype != DataType::kFloat32 || tensor->shape.rank() != 4 ||
        std::find(outputs.begin(), outputs.end(), made) != outputs.end())
      continue;
    auto read = readers.find(made);
    if (read == readers.end()) continue;
    const bool allTakeIt = std::all_of(read->second.begin(), read->second.end(), [&](const auto& use) {
      const auto [reader, input] = use;
      const bool residual = input == 3 && layers[reader].domain == fused::kDomain;
      return takesChannelsLast(reader) && (input == 0 || residual);
    });
    if (allTakeIt) formats[made] = TensorFormat::kNHWC;
  }
  return formats;
}

HostTensor channelsLastToLinear(const HostTensor& nhwc) {
  const auto& d = nhwc.dims();  // N, C, H, W (the logical dims)
  HostTensor out(nhwc.dtype(), d);
  const int64_t n = d.at(0), c = d.at(1), plane = d.at(2) * d.at(3);
  const size_t element = nhwc.byteSize() / size_t(std::max<int64_t>(1, nhwc.elementCount()));
  const char* in = static_cast<const char*>(nhwc.rawData());
  char* o = static_cast<char*>(out.rawData());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < plane; ++p)
      for (int64_t ch = 0; ch < c; ++ch)
        std::memcpy(o + size_t((b * c + ch) * plane + p) * element, in + size_t((b * plane + p) * c + ch) * element,
                    element);
  return out;
}

}  // namespace kiln
