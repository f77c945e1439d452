#pragma once
// Which activations a CPU engine keeps channels-last (NHWC) between layers.
#include <kiln/network.h>

#include "../backend.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

// A 4-D float32 tensor is kept NHWC when the layer making it and every layer reading it run tactics
// that take channels-last activations (CpuTactic::channelsLast), each reading it as input 0 or as a
// kiln.FusedConv's residual (input 3), and it is not a graph output; its maker computes in fp32.
// The two re-layouts between such layers (oneDNN convolutions: NCHW <-> the NHWC their kernels use)
// then disappear. Networks with subgraphs (whose bodies read outer tensors by name) keep all linear.
std::unordered_map<std::string, TensorFormat> channelsLastTensors(const Network& network,
                                                                  const std::vector<std::string>& tactics,
                                                                  const std::vector<Precision>& precisions);

// Copies an [N, C, plane] (linear) tensor into [N, plane, C] (channels-last) order, or back, for
// elements of `element` bytes.
void relayoutChannels(const void* in, void* out, int64_t n, int64_t c, int64_t plane, size_t element,
                      bool toChannelsLast);

// An NHWC tensor's values in the linear (NCHW) order of its dims.
HostTensor channelsLastToLinear(const HostTensor& nhwc);

}  // namespace kiln
