#pragma once
// The inputs of `kiln run`: files named by --input, random tensors (shaped by --shapes where the
// model leaves dims open) for the rest.
#include <kiln/network.h>
#include <kiln/reference_executor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::cli {

struct InputRequest {
  std::vector<std::string> inputFiles;  // "NAME=FILE"
  std::vector<std::string> shapes;      // "NAME:1x3x224x224", possibly several joined by ','
  uint64_t seed = 0;
  // Shapes for random inputs that --shapes leaves open and the model does not fix (a plan's
  // profile-0 opt shapes, as trtexec does).
  std::map<std::string, std::vector<int64_t>> defaultShapes;
};

struct PreparedInput {
  std::string name;
  Value value;
  std::string file;  // the file it came from; empty for random values
};

// Validates the request against the model's inputs and loads or generates every runtime input.
// Usage mistakes (unknown names, malformed specs, missing dims) throw kiln::Error(kInvalidArgument).
std::vector<PreparedInput> prepareInputs(const Network& net, const InputRequest& request);

}  // namespace kiln::cli
