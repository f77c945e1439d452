#pragma once
#include "../backends/backend.h"
#include "engine_description.h"

#include <string>
#include <vector>

namespace kiln {

// Chooses each layer's precision: the config's storage precision for layers with float outputs,
// per-layer constraints where the backend can honour them. Layers that must stay in a higher
// precision than asked are named in `warnings`.
std::vector<LayerDecision> planPrecisions(const Network& network, const BuilderConfig& config, const Backend& backend,
                                          std::vector<std::string>& warnings);

}  // namespace kiln
