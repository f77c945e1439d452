#pragma once
// A quantization advisor: for each layer a reduced-precision build (INT8 above all) runs below
// PrecisionDebugOptions::keepPrecision, the error when only that layer is reduced (every other
// candidate held back) and the time it saves (its per-layer profile time in the all-kept engine
// minus that in the all-reduced engine, from profileEngine); ranked by error. The suggestion, "keep
// these", is the fewest worst-ranked layers whose holding back makes the rest pass (a bisection over
// the ranking, assuming that holding more back never hurts).
#include <kiln/layer_precision_file.h>
#include <kiln/logger.h>
#include <kiln/network.h>
#include <kiln/precision_debug.h>

#include <string>
#include <vector>

namespace kiln {

struct QuantizationAdvisorOptions {
  int profileIterations = 20;  // profiled runs of each engine for the per-layer times (first input set)
};

struct LayerAdvice {
  std::string name, type;  // the layer and its op type in the reduced engine
  std::string precision;   // what the reduced build runs it in ("int8", "fp16", ...)
  AccuracyScore alone;     // the engine with only this layer reduced
  double keptMs = 0;       // median time in the all-kept engine
  double reducedMs = 0;    // median time in the all-reduced engine
  double savedMs() const { return keptMs - reducedMs; }
  bool pareto = false;  // no other layer has both a smaller error and a larger saving
  bool keep = false;    // in the suggestion
};

struct QuantizationAdvice {
  AccuracyCriterion criterion;
  Precision keepPrecision = Precision::kFP32;
  std::vector<LayerAdvice> layers;  // worst error first
  std::vector<PrecisionTrial> trials;
  AccuracyScore reducedScore, allKeptScore, suggestedScore;
  bool suggestionPasses = false;     // false: even every candidate held back fails
  std::vector<std::string> keep;     // the suggestion, worst first
  double keptTotalMs = 0, reducedTotalMs = 0, suggestedTotalMs = 0;  // end-to-end medians

  // `keep` at keepPrecision, plus the config's own constraints: what `kiln build` needs.
  LayerPrecisions constraints(const BuilderConfig& config) const;
  std::string toJson(int indent = 2) const;  // "kiln-quantization-advice-1"
  std::string toCsv() const;                 // one row a layer, worst first
  // A Pareto plot: error (log scale) against time saved per layer, the Pareto front joined, the
  // suggested layers marked, the criterion's limit drawn. Plain SVG, no scripts.
  std::string toSvg() const;
};

// Throws kiln::Error as bisectPrecision does.
QuantizationAdvice adviseQuantization(const Network& network, const PrecisionDebugOptions& options,
                                      const QuantizationAdvisorOptions& advisor = {},
                                      PrecisionDebugObserver* observer = nullptr, Logger& logger = silentLogger());

}  // namespace kiln
