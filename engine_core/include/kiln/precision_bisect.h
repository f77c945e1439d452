#pragma once
// Polygraphy's `debug precision`, automated: which layers of a reduced-precision engine must stay
// in a higher precision for its outputs to meet a criterion. The candidates are the layers the
// unconstrained reduced build runs below PrecisionDebugOptions::keepPrecision, in topological
// order. A bisection finds the shortest prefix of them that, held back, passes (log2(n) builds,
// assuming that holding more layers back never hurts); a greedy refinement then tries releasing
// each of the prefix's layers in turn and keeps the release where the criterion still holds, so
// no single layer of the final set can be released.
#include <kiln/layer_precision_file.h>
#include <kiln/logger.h>
#include <kiln/network.h>
#include <kiln/precision_debug.h>

#include <string>
#include <vector>

namespace kiln {

struct PrecisionBisectOptions {
  bool refine = true;  // false: the bisection's prefix, as Polygraphy reports it
};

struct PrecisionBisectResult {
  Precision keepPrecision = Precision::kFP32;
  std::vector<std::string> candidates;  // in topological order
  std::vector<PrecisionTrial> trials;   // every build, in order
  bool reducedPasses = false;  // nothing needs holding back
  bool allKeptPasses = false;  // false: even every candidate held back fails; `keep` is empty
  std::vector<std::string> keep;  // the layers to hold back, topological order
  AccuracyScore reducedScore, finalScore;  // with nothing held back; with `keep` held back

  // `keep` at keepPrecision, plus the config's own constraints: what `kiln build` needs.
  LayerPrecisions constraints(const BuilderConfig& config) const;
  std::string toJson(int indent = 2) const;  // "kiln-precision-bisect-1"
};

// Throws kiln::Error for options it cannot use (no inputs, a build that fails, a precision that
// reduces nothing) and kCancelled when the observer cancels.
PrecisionBisectResult bisectPrecision(const Network& network, const PrecisionDebugOptions& options,
                                      const PrecisionBisectOptions& bisect = {},
                                      PrecisionDebugObserver* observer = nullptr, Logger& logger = silentLogger());

}  // namespace kiln
