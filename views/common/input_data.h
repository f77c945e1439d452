#pragma once
// The input tensors for profiling and accuracy runs: seeded random values in each input's shape
// (its opt shape when dynamic), or files from a folder (<input>.npy / <input>.pb, or ONNX test-set
// style input_0.pb, input_1.pb, ...).
#include <kiln/builder_config.h>
#include <kiln/host_tensor.h>
#include <kiln/runtime.h>

#include <QString>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::views {

struct InputSource {
  enum class Kind { kRandom, kFolder };
  Kind kind = Kind::kRandom;
  uint64_t seed = 1;
  QString folder;
};

// The shape each input runs at: its own when static, else profile 0's opt dims.
std::map<std::string, std::vector<int64_t>> runShapes(const std::vector<IOTensorInfo>& io,
                                                      const std::vector<OptimizationProfile>& profiles);

// Throws kiln::Error naming the input or file and what to do.
std::map<std::string, HostTensor> makeInputs(const std::vector<IOTensorInfo>& io,
                                             const std::vector<OptimizationProfile>& profiles,
                                             const InputSource& source);

}  // namespace kiln::views
