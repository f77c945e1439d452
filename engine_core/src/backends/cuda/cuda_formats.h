#pragma once
// Which activations the CUDA backend keeps channels-last (NHWC): a 4-D tensor whose maker and every
// reader run tactics that take it (CudaOp::channelsLastInputs, at the input it is read as), that is
// not a graph output; a layer whose input and output must share a layout (a windowed pool) gets
// both or neither. Chains of cuDNN graph convolutions and pools then run without re-layouts.
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include "../../ir/tensor_placement.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::cuda {

std::unordered_map<std::string, TensorFormat> channelsLastTensors(const Network& network,
                                                                  const std::vector<std::string>& tactics);

}  // namespace kiln::cuda
