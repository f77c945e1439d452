#include "channels_last.h"

#include "../../ops/fused.h"
#include "../../runtime/subgraph_cache.h"
#include "cpu_kernel.h"

#include <kernels/cpu/common/parallel.h>

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

void relayoutChannels(const void* in, void* out, int64_t n, int64_t c, int64_t plane, size_t element,
                      bool toChannelsLast) {
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  kernels::parallelFor(n * plane, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / plane, p = row % plane;
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t linear = size_t((b * c + ch) * plane + p) * element;
        const size_t channelsLast = size_t((b * plane + p) * c + ch) * element;
        if (toChannelsLast) std::memcpy(dst + channelsLast, src + linear, element);
        else std::memcpy(dst + linear, src + channelsLast, element);
      }
    }
  });
}

HostTensor channelsLastToLinear(const HostTensor& nhwc) {
  const auto& d = nhwc.dims();  // N, C, H, W (the logical dims)
  HostTensor out(nhwc.dtype(), d);
  const size_t element = nhwc.byteSize() / size_t(std::max<int64_t>(1, nhwc.elementCount()));
  relayoutChannels(nhwc.rawData(), out.rawData(), d.at(0), d.at(1), d.at(2) * d.at(3), element, false);
  return out;
}

}  // namespace kiln
