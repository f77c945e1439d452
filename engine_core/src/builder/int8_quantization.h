#pragma once
// The INT8 step of a build (BuilderConfig::allowINT8), after the graph passes: the layers the
// engine's backend can run in int8 get their activation scales (calibration/calibrate.h) and are
// replaced by quantized layers (passes/quantize_layers.h).
#include "../backends/backend.h"
#include "calibration/calibrate.h"

#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <map>
#include <string>

namespace kiln {

// Quantizes `network` (the model after the passes; `model` as given, which names the calibration
// cache). Fills report.calibration, adds the quantization pass to report.passes and a warning
// naming the Conv / MatMul / Gemm layers that stay float; returns those layers' reasons by name.
std::map<std::string, std::string> quantizeForInt8(const Network& model, Network& network, const BuilderConfig& config,
                                                   const Backend& engine,
                                                   const calibration::CalibrationProgress& progress,
                                                   BuildReport& report);

}  // namespace kiln
