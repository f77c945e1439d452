#pragma once
// What the precision tools share (`kiln debug precision`, `kiln debug advise`, Kiln Studio): a
// reduced-precision build (INT8, FP16, BF16) is tried with some layers held to a higher precision
// (BuilderConfig::layerPrecisions), its outputs scored against an FP32 reference on the same
// inputs, and each such trial reported. Everything goes through the public Builder and Runtime,
// so the tools work on every backend.
#include <kiln/builder_config.h>
#include <kiln/compare.h>
#include <kiln/host_tensor.h>

#include <map>
#include <string>
#include <vector>

namespace kiln {

// When a reduced-precision engine is close enough to the reference: every element within the
// tolerance, or every output's cosine similarity at least `minCosine`, on every input set.
struct AccuracyCriterion {
  enum class Metric { kTolerance, kCosine };
  Metric metric = Metric::kTolerance;
  Tolerance tolerance;      // kTolerance
  double minCosine = 0.99;  // kCosine

  std::string describe() const;  // "atol 0.0001, rtol 0.001" / "cosine >= 0.99"
  // The largest error() that passes: 1 (tolerance) or 1 - minCosine (cosine).
  double limit() const;
};

// A candidate's outputs against the reference's, over every input set and output.
struct AccuracyScore {
  // The criterion's measure, worst case: the tolerance ratio (|err| / (atol + rtol |ref|)) or
  // 1 - cosine similarity; 0 is exact, infinite for NaN/Inf mismatches or missing outputs.
  double error = 0;
  bool pass = true;  // error <= the criterion's limit()
  double worstCosine = 1;
  double maxAbsError = 0;
  double worstSnrDb = 999;
  std::string worstOutput;  // the output that set `error`
  std::string why;          // an output missing or of another shape
};

using InputSet = std::map<std::string, HostTensor>;

// `reference[s]` and `candidate[s]` are the outputs for input set s.
AccuracyScore scoreOutputs(const AccuracyCriterion& criterion, const std::vector<InputSet>& reference,
                           const std::vector<InputSet>& candidate);

// The ground truth trials are scored against.
enum class ReferenceKind {
  kModel,       // the model as given, on Kiln's reference executor (as Polygraphy uses ONNX Runtime)
  kFp32Engine,  // an FP32 engine of the same backend (no TF32): faster for large models on a GPU
};

struct PrecisionDebugOptions {
  // The reduced-precision build: allowINT8 (with its calibration), allowFP16 or allowBF16, the
  // backend, profiles, optimisation level. Its layerPrecisions hold in every trial.
  BuilderConfig config;
  // What layers held back run in. FP32 by default; FP16 or BF16 make sense for INT8 builds that
  // also allow them. Layers the reduced build runs at this precision or above are not candidates.
  Precision keepPrecision = Precision::kFP32;
  std::vector<InputSet> inputs;  // at least one; every trial runs them all
  AccuracyCriterion criterion;
  ReferenceKind reference = ReferenceKind::kModel;
};

// One build tried and scored.
struct PrecisionTrial {
  int index = 0;               // 1, 2, ... in the order they ran
  std::string phase;           // "reduced", "all kept", "bisect", "refine", "only", "keep worst"
  std::string note;            // what distinguishes it: "first 12 of 20", "without 'conv3'", ...
  std::vector<std::string> kept;  // candidate layers held to keepPrecision, in topological order
  AccuracyScore score;
  double buildMs = 0;
};

// Progress and cancel, as BuildObserver does for one build.
class PrecisionDebugObserver {
 public:
  virtual ~PrecisionDebugObserver() = default;
  virtual void trial(const PrecisionTrial& trial) { (void)trial; }
  // `what`: the trial being built and the build's phase; `fraction` of the build (0..1).
  virtual void progress(const std::string& what, double fraction) {
    (void)what;
    (void)fraction;
  }
  // True stops the work (inside a build too) with ErrorCode::kCancelled.
  virtual bool cancelled() { return false; }
};

}  // namespace kiln
