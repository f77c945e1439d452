#pragma once
// Per-layer precision constraints (BuilderConfig::layerPrecisions) name engine layers: the layers
// after the graph passes. A name that is not one is refused before it could silently do nothing.
#include <kiln/builder_config.h>
#include <kiln/network.h>

namespace kiln {

// Throws kiln::Error(kInvalidArgument) for the first constraint whose name is no layer of
// `afterPasses`, saying where it went: fused into another layer (by its origins), removed by the
// passes (a layer of `model` that left no trace), or never there (with some names that are).
void checkLayerConstraintNames(const Network& model, const Network& afterPasses, const BuilderConfig& config);

}  // namespace kiln
