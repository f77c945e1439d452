#pragma once
#include "../backends/backend.h"
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <string>
#include <vector>

namespace kiln {

// Chooses each layer's precision: the config's storage precision for layers with float outputs,
// per-layer constraints where the backend can honour them (the CPU's, for layers the engine's
// backend cannot run at all: they fall back there). Kiln's quantized layers (made by the INT8
// step) are int8 and no other layer is asked to be. Layers that must stay in a higher precision
// than asked are named in `warnings`.
// The precision a float layer computes in without a per-layer constraint: the storage precision,
// with TF32 for fp32 layers off the CPU where the config allows it.
Precision floatPrecisionOf(const BuilderConfig& config, bool onCpu);

std::vector<Precision> planPrecisions(const Network& network, const BuilderConfig& config, const Backend& engine,
                                      const Backend& cpu, std::vector<std::string>& warnings);

}  // namespace kiln
