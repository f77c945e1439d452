#include "profile_validation.h"

#include <kiln/error.h>

#include <algorithm>

namespace kiln {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::kInvalidArgument, msg); }

bool isDynamic(const Tensor& t) { return !t.shape.isFullyKnown(); }

}  // namespace

void validateProfiles(const Network& network, const BuilderConfig& config) {
  auto inputs = network.runtimeInputs();
  for (size_t p = 0; p < config.profiles.size(); ++p) {
    std::string where = "optimization profile " + std::to_string(p);
    for (const auto& [name, range] : config.profiles[p].inputs) {
      if (std::find(inputs.begin(), inputs.end(), name) == inputs.end())
        invalid(where + " names '" + name + "', which is not an input of the model");
      const Tensor& t = network.tensor(name);
      size_t rank = range.min.size();
      if (range.opt.size() != rank || range.max.size() != rank)
        invalid(where + ", input '" + name + "': min, opt and max must have the same rank (got " +
                dimsToString(range.min) + ", " + dimsToString(range.opt) + ", " + dimsToString(range.max) + ")");
      if (t.shape.hasRank() && t.shape.rank() != rank)
        invalid(where + ", input '" + name + "' has rank " + std::to_string(t.shape.rank()) + " (shape " +
                t.shape.toString() + "), the profile gives rank " + std::to_string(rank));
      for (size_t d = 0; d < rank; ++d) {
        std::string dim = where + ", input '" + name + "' dimension " + std::to_string(d);
        if (range.min[d] < 0) invalid(dim + ": min " + std::to_string(range.min[d]) + " is negative");
        if (!(range.min[d] <= range.opt[d] && range.opt[d] <= range.max[d]))
          invalid(dim + ": needs min <= opt <= max, got " + std::to_string(range.min[d]) + ", " +
                  std::to_string(range.opt[d]) + ", " + std::to_string(range.max[d]));
        if (t.shape.hasRank() && t.shape[d].isKnown() &&
            (range.min[d] != t.shape[d].value() || range.max[d] != t.shape[d].value()))
          invalid(dim + " is fixed at " + std::to_string(t.shape[d].value()) + " in the model; the profile gives [" +
                  std::to_string(range.min[d]) + ", " + std::to_string(range.max[d]) + "]");
      }
    }
    for (const auto& name : inputs)
      if (isDynamic(network.tensor(name)) && !config.profiles[p].inputs.count(name))
        invalid(where + " does not cover dynamic input '" + name + "' (shape " +
                network.tensor(name).shape.toString() + "); give it min/opt/max shapes");
  }
  if (config.profiles.empty())
    for (const auto& name : inputs)
      if (isDynamic(network.tensor(name)))
        invalid("input '" + name + "' has dynamic shape " + network.tensor(name).shape.toString() +
                "; give an optimization profile (--min-shapes/--opt-shapes/--max-shapes " + name + ":...)");
}

std::map<std::string, std::vector<int64_t>> profileShapes(const Network& network, const BuilderConfig& config,
                                                          size_t profile, ProfilePoint pick) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& name : network.runtimeInputs()) {
    const Tensor& t = network.tensor(name);
    if (profile < config.profiles.size()) {
      auto it = config.profiles[profile].inputs.find(name);
      if (it != config.profiles[profile].inputs.end()) {
        shapes[name] = pick == ProfilePoint::kMin ? it->second.min : pick == ProfilePoint::kOpt ? it->second.opt : it->second.max;
        continue;
      }
    }
    if (t.shape.isFullyKnown()) shapes[name] = t.shape.knownDims();
  }
  return shapes;
}

std::map<std::string, std::vector<int64_t>> concreteShapes(const Network& network,
                                                           const std::map<std::string, std::vector<int64_t>>& inputs) {
  Network copy = network;
  for (const auto& [name, dims] : inputs) copy.tensor(name).shape = Shape::fromDims(dims);
  std::map<std::string, std::vector<int64_t>> shapes;
  try {
    copy.inferShapes();
  } catch (const Error&) {
    return shapes;  // shapes that need run-time data stay unplanned
  }
  for (const auto& name : copy.tensorNames()) {
    const Tensor& t = copy.tensor(name);
    if (t.kind == ValueKind::kTensor && t.shape.isFullyKnown()) shapes[name] = t.shape.knownDims();
  }
  return shapes;
}

}  // namespace kiln
