#pragma once
// Calibration data for INT8 builds: a folder of NumPy files, one or more per graph input (the
// naming rule is on CalibrationConfig::dataPath), read and checked against the model's inputs.
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <map>
#include <string>
#include <vector>

namespace kiln::calibration {

// A value for every runtime input of the model.
using Batch = std::map<std::string, HostTensor>;

// The file name stem of input `name`: characters other than letters, digits, '.', '-' and '_'
// become '_'.
std::string fileStemOf(const std::string& inputName);

// The batches in `folder` for `network`'s runtime inputs, at most `maxBatches` (0: all); `folder`
// may also be one .npy file for a model with one input. Throws one
// kiln::Error(kInvalidArgument) naming the file and what is wrong: a missing input, files numbered
// with gaps, a file that names no input, a dtype or shape the input does not take, a non-finite
// value, inputs with different batch counts.
// `what` names the data in the errors.
std::vector<Batch> loadCalibrationData(const Network& network, const std::string& folder, int64_t maxBatches,
                                       const std::string& what = "calibration data");

}  // namespace kiln::calibration
