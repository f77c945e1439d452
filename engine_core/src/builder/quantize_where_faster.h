#pragma once
// BuilderConfig::quantizeWhereFaster: the calibrated build's candidates keep their quantized
// precision only where it is faster. Each candidate is timed on the engine's backend twice with the
// builder's tactic selector and timing cache: as the quantized layer that would replace it (in the
// network quantized as a whole and chained, so a layer that would read int8 is timed reading it)
// and as it is in the build's float precision. Per-layer times ignore what a change of precision
// costs its neighbours (an int8 output its readers no longer take), as TensorRT's per-layer choice
// does; the engine's own profile says what the whole engine gained.
#include "../backends/backend.h"
#include "../passes/quantize_layers.h"
#include "tactic_selector.h"
#include "timing_cache.h"

#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <functional>

namespace kiln {

struct QuantizationTiming {
  const Backend& engine;
  TimingCache& cache;
  TacticSearch search;
  Precision floatPrecision;  // what a candidate that stays float computes in
  // Told the layer and tactic about to run (progress; it may throw to cancel the build).
  std::function<void(const std::string& layer, const std::string& tactic)> listener;
};

// Makes `network` the quantized network of `survey` (the quantize pass and the int8 chaining).
using QuantizeNetwork = std::function<void(Network& network, Int8Survey& survey)>;

// Quantizes `network` (the float network the survey was made on) with the candidates of `survey`
// that are faster quantized; the others go into survey.keptFloat with both times as the reason.
void quantizeWhereFaster(Int8Survey& survey, Network& network, const BuilderConfig& config,
                         const QuantizationTiming& timing, const QuantizeNetwork& quantize);

}  // namespace kiln
