#pragma once
// The calibration cache: a text file of activation scales that a later INT8 build reuses without
// calibration data. Three header lines name the format, the model (a fingerprint of its network)
// and the calibrator; then one "tensor: scale" a line:
//
//   # kiln calibration cache 1
//   # model 3f9a0c1e5b7d2468
//   # calibrator entropy
//   input_1: 0.0248031486
#include <kiln/network.h>

#include <cstdint>
#include <map>
#include <string>

namespace kiln::calibration {

struct CalibrationCache {
  std::string model;       // networkFingerprint() of the model it was made for, in hex
  std::string calibrator;  // "entropy", "minmax" or "percentile 99.99"
  std::map<std::string, float> scales;
};

// A fingerprint of everything that decides a network's values: inputs, outputs, layers with their
// attributes and every constant's bytes (names included), as 16 hex digits (FNV-1a, 64 bits).
std::string networkFingerprint(const Network& network);

std::string formatCalibrationCache(const CalibrationCache& cache);
// Throws kiln::Error(kInvalidArgument) naming `source` and the line for a malformed cache.
CalibrationCache parseCalibrationCache(const std::string& text, const std::string& source);

}  // namespace kiln::calibration
