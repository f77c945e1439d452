#include "layer_constraints.h"

#include <kiln/error.h>

#include <set>

namespace kiln {
namespace {

// "'a', 'b', 'c' and 12 more"
std::string someNames(const Network& network) {
  std::string s;
  size_t shown = 0;
  for (const Layer& layer : network.layers()) {
    if (shown == 4) break;
    s += (shown++ ? ", '" : "'") + layer.name + "'";
  }
  if (network.layers().size() > shown) s += " and " + std::to_string(network.layers().size() - shown) + " more";
  return s;
}

}  // namespace

void checkLayerConstraintNames(const Network& model, const Network& afterPasses, const BuilderConfig& config) {
  std::set<std::string> layers;
  for (const Layer& layer : afterPasses.layers()) layers.insert(layer.name);
  for (const auto& [name, precision] : config.layerPrecisions) {
    if (layers.count(name)) continue;
    const std::string constraint = "the layer precision constraint " + name + ":" + toString(precision);
    for (const Layer& layer : afterPasses.layers())
      for (const auto& origin : layer.origins)
        if (origin == name)
          throw Error(ErrorCode::kInvalidArgument, constraint + " names ONNX node '" + name +
                                                       "', which the graph passes fused into layer '" + layer.name +
                                                       "'; constrain '" + layer.name + "' instead");
    bool inModel = false;
    for (const Layer& layer : model.layers()) inModel = inModel || layer.name == name;
    if (inModel)
      throw Error(ErrorCode::kInvalidArgument,
                  constraint + " names ONNX node '" + name + "', which the graph passes removed (at optimisation level " +
                      std::to_string(config.optimizationLevel) + " it was folded or is unused); drop the constraint");
    throw Error(ErrorCode::kInvalidArgument,
                constraint + " names no layer of this model's engine (its layers after the graph passes at "
                             "optimisation level " + std::to_string(config.optimizationLevel) + ": " +
                    someNames(afterPasses) + "; `kiln inspect PLAN` lists them all)");
  }
}

}  // namespace kiln
