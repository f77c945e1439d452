#pragma once
#include <kiln/builder_config.h>
#include <kiln/network.h>

namespace kiln {

// Checks the config's optimisation profiles against the network: names exist, ranks match,
// min <= opt <= max, static dims are not overridden, every dynamic input is covered. Throws
// kiln::Error(kInvalidArgument) naming the profile, input and dimension.
void validateProfiles(const Network& network, const BuilderConfig& config);

// The network's input shapes for `pick` (min, opt or max) of a profile; static inputs keep theirs.
enum class ProfilePoint { kMin, kOpt, kMax };
std::map<std::string, std::vector<int64_t>> profileShapes(const Network& network, const BuilderConfig& config,
                                                          size_t profile, ProfilePoint pick);

// Concrete shapes of every tensor when the inputs take the given shapes (unknown ones omitted).
std::map<std::string, std::vector<int64_t>> concreteShapes(const Network& network,
                                                           const std::map<std::string, std::vector<int64_t>>& inputs);

}  // namespace kiln
