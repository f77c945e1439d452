#pragma once
// Which backend runs each layer. Layers of the shape phase run on the host; the rest go to the
// engine's backend where it can run them, else they fall back to the CPU with the reason (or, with
// strictDevice, the build fails naming them). Control flow, sequences and strings, and layers whose
// output size depends on data, run on the CPU in this first cut.
#include <kiln/builder_config.h>

#include "../backends/backend.h"
#include "../plan/engine_plan.h"
#include "shape_values.h"

#include <string>
#include <vector>

namespace kiln {

// Fills backend, phase, dataDependentShape and fallbackReason of `layers` (parallel to the
// network's layers, precisions set). Fallbacks are listed in `warnings`.
void placeLayers(const Network& network, const ShapeValuePlan& shapes, const Backend& engineBackend,
                 bool strictDevice, std::vector<PlannedLayer>& layers, std::vector<std::string>& warnings);

// Whether a layer reads or writes values that live on the host only: sequences, optionals and
// string tensors, or subgraph bodies.
bool usesHostOnlyValues(const Network& network, const Layer& layer);

}  // namespace kiln
