#pragma once
// The INT8 step's last pass (builder/int8_quantization.cpp): int8 layers whose results only int8
// layers read write them as int8 (see chain_int8_activations.cpp).
#include "pass.h"

#include <memory>

namespace kiln {

std::unique_ptr<Pass> createChainInt8ActivationsPass();

}  // namespace kiln
