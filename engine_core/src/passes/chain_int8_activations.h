#pragma once
// The INT8 step's last pass (builder/int8_quantization.cpp): int8 layers whose results only int8
// layers read (as their activation or their residual) write them as int8 (see
// chain_int8_activations.cpp).
#include "pass.h"

#include <map>
#include <memory>
#include <string>

namespace kiln {

// `calibratedScales` (tensor -> scale; may be null) gives a result that only residuals read its scale.
// residuals: whether residual readers take the tensor as int8 too (BuilderConfig::int8Residuals).
std::unique_ptr<Pass> createChainInt8ActivationsPass(const std::map<std::string, float>* calibratedScales = nullptr,
                                                     bool residuals = true);

}  // namespace kiln
