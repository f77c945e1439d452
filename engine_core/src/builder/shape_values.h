#pragma once
// Which tensors' values decide shapes, and where those values come from. Shape inference of some
// ops reads input values (Reshape's shape, Slice's starts, Expand's shape, TopK's k, Range's
// limits). Where such a value is small shape arithmetic (Shape -> Gather -> Concat, constants,
// small graph inputs), the engine computes it on the host in the shape phase, before enqueue, and
// every tensor's dims are known before launch. Where it is computed from data, or an op's output
// size depends on the data it computes (NonZero, Unique, NonMaxSuppression), the layer is
// data-dependent: the runtime synchronises there and works out later shapes after it ran.
#include <kiln/network.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln {

struct ShapeValuePlan {
  // Per layer: it runs on the host in the shape phase (its outputs are shape values).
  std::vector<bool> inShapePhase;
  // Per layer: why its output shape depends on data ("" when it does not).
  std::vector<std::string> dataDependent;
  // Per layer, per input: the inference reads this input's value, which the shape phase provides
  // in host memory.
  std::vector<std::vector<bool>> valueInputs;
  // Graph inputs whose values the shape phase reads: bound in host memory (TensorRT's shape tensors).
  std::set<std::string> shapeInputs;
};

// `inputShapes`: the graph inputs' dims at the points to check (each profile's max point, or the
// static shapes). The network's layers must be in topological order.
ShapeValuePlan analyzeShapeValues(const Network& network,
                                  const std::vector<std::map<std::string, std::vector<int64_t>>>& inputShapes);

}  // namespace kiln
