#pragma once
// Post-training INT8 calibration: the activation scales of an INT8 build, from a calibration cache
// or by running the FP32 network on the CPU over the calibration batches (TensorRT's implicit
// quantization; the calibrators are in calibrators.h).
#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <functional>
#include <set>
#include <string>

namespace kiln::calibration {

// Called between batches with the fraction done (0..1) and what is happening; may throw to cancel.
using CalibrationProgress = std::function<void(double fraction, const std::string& detail)>;

// Scales for `tensors` of `network` (the builder's network after its passes, so tensor names are
// the engine's). `model` is the network as given to the builder: the cache is keyed by its
// fingerprint. The cache (config.calibration.cachePath) is used when it exists, and must be for
// this model and calibrator (else kiln::Error naming both); otherwise the calibration data is read
// and run (writeCalibrationCache saves the scales once the build is done). `timingCachePath` is
// shared with the FP32 engine's build.
CalibrationSummary activationScales(const Network& model, const Network& network, const std::set<std::string>& tensors,
                                    const BuilderConfig& config, const CalibrationProgress& progress);

// Writes the scales `summary` calibrated from data to its cache path (none: nothing), keyed by
// `model`'s fingerprint. The builder calls it after the plan is made, so a cancelled or failed
// build leaves no cache.
void writeCalibrationCache(const Network& model, const CalibrationSummary& summary);

// "entropy", "minmax" or "percentile P": how a cache names the calibrator that made it.
std::string calibratorDescription(const CalibrationConfig& config);

}  // namespace kiln::calibration
