#pragma once
// The build options `kiln build` and `kiln debug` share: the backend, reduced precisions, INT8
// calibration, optimisation level and per-layer precision constraints.
#include <CLI/CLI.hpp>

#include <kiln/builder_config.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cli {

struct PrecisionOptions {
  std::string backend = "cpu";
  bool fp16 = false, bf16 = false, int8 = false, fp8 = false, fp4 = false;
  bool quantizeWhereFaster = false;
  bool int8Residuals = false;
  std::string calibData, calibrator = "entropy", calibCache;
  std::string calibMean = "0.485,0.456,0.406", calibStd = "0.229,0.224,0.225";  // images only
  double calibPercentile = 99.99;
  int64_t calibBatches = 0;
  int optLevel = 3;
  std::vector<std::string> layerPrecisions;  // LAYER:PRECISION
  std::string layerPrecisionFile;
};

void addPrecisionOptions(CLI::App* command, PrecisionOptions& o);

// Sets config's backend, precisions, calibration, optimisation level and layer constraints (those
// of --layer-precision-file first, then --layer-precision's, which win). Usage mistakes throw
// kiln::Error(kInvalidArgument) naming the option.
void applyPrecisionOptions(const PrecisionOptions& o, BuilderConfig& config);

}  // namespace kiln::cli
