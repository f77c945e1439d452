#pragma once
// Tensor placement: every non-constant tensor's storage type, format and memory space, decided from
// the layer that makes it; and the Copy, Cast and Reformat layers the builder inserts wherever a
// reader needs a tensor in another memory space, storage type or format. Graph outputs end in the
// engine's memory space (host for sequences and strings), in their declared type, linear; graph
// inputs arrive there too, except shape inputs (host). The runtime then converts nothing itself.
#include "../backends/backend.h"
#include "../plan/engine_plan.h"
#include "shape_values.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

struct PlacementBackends {
  const Backend& engine;  // the backend the engine was built for
  const Backend& cpu;
  const Backend& named(const std::string& name) const { return name == engine.name() ? engine : cpu; }
};

// Rewrites `network` (conversion layers inserted before their first reader; producers of graph
// outputs that need converting write a renamed tensor) and `layers` to match, and fills `tensors`.
// `shapes` describes the network as it is passed in.
void placeTensorsAndConvert(Network& network, std::vector<PlannedLayer>& layers,
                            std::map<std::string, PlannedTensor>& tensors, const ShapeValuePlan& shapes,
                            const PlacementBackends& backends);

// The storage type of activations computed in `precision` (fp16, bf16 or fp32).
DataType storageTypeOf(Precision precision);

// The storage type of a layer's float32 activations: its precision's, except for a quantized layer
// (int8, fp8, fp4: float32 storage) to which the builder gave its engine's float storage
// (quantized::kFloatStorage, "fp16" / "bf16").
DataType activationStorageOf(const Layer& layer, Precision precision);

}  // namespace kiln
