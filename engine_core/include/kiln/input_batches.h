#pragma once
// Sets of model inputs read from a folder of NumPy files named by input, as calibration data is
// (CalibrationConfig::dataPath: NAME.npy or NAME.0.npy, NAME.1.npy, ..., dim 0 the batch): real
// data for the precision tools and comparisons, e.g. samples held out of calibration.
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

// One map per batch, every runtime input in each; at most `maxBatches` (0: all). Throws
// kiln::Error(kInvalidArgument) naming the file and what is wrong: a missing input, a stray file, a
// gap in the numbering, a dtype or shape the input does not take, a non-finite value.
std::vector<std::map<std::string, HostTensor>> loadInputBatches(const Network& network, const std::string& folder,
                                                                int64_t maxBatches = 0);

}  // namespace kiln
