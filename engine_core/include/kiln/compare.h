#pragma once
// Comparing results: the element-wise closeness check used by conformance tests and `kiln compare`.
#include <kiln/host_tensor.h>

#include <string>

namespace kiln {

// "" when `actual` matches `expected`: same kind, dtype and shape; floats within
// |a - e| <= atol + rtol * |e| with NaN only where NaN is expected and infinities matching;
// integers, bools and strings exactly. Otherwise a one-line reason naming the first mismatch.
std::string checkClose(const Value& actual, const Value& expected, double rtol, double atol);
std::string checkClose(const HostTensor& actual, const HostTensor& expected, double rtol, double atol);

}  // namespace kiln

#include <functional>
#include <map>
#include <vector>

namespace kiln {

// Elementwise tolerance: an element passes when |candidate - reference| <= atol + rtol * |reference|.
struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-3;
};

struct TensorMetrics {
  std::string name;
  std::string layer;             // engine layer that produced it (per-layer comparisons)
  int64_t elements = 0;
  double maxAbsError = 0;
  double maxRelError = 0;        // relative to |reference| (elements with |reference| > 1e-12)
  double meanAbsError = 0;
  double cosineSimilarity = 1;
  double snrDb = 0;              // 10 log10(sum ref^2 / sum err^2); +inf reported as 999
  int64_t failing = 0;           // elements outside the tolerance (NaN/Inf mismatches included)
  // The worst |candidate - reference| / (atol + rtol * |reference|): the tolerance passes up to 1;
  // infinite for NaN/Inf mismatches (a continuous score where `failing` only counts).
  double toleranceRatio = 0;
  bool pass = true;
  std::string why;               // when not comparable (shape/dtype mismatch)
  // Counts of |error| per decade: [<1e-7, 1e-7..1e-6, ..., 1e-1..1, >=1].
  std::vector<int64_t> errorHistogram;
};

TensorMetrics measureTensor(const std::string& name, const HostTensor& reference, const HostTensor& candidate,
                            const Tolerance& tolerance);

struct ComparisonReport {
  std::vector<TensorMetrics> outputs;
  std::vector<TensorMetrics> layers;  // intermediate tensors both sides computed, in execution order
  bool pass = true;
  std::string toJson(int indent = 2) const;
};

// A way to run something (a model on the reference executor, an engine) that returns its outputs
// and reports every intermediate tensor it computes (name, producing layer, value).
using TensorObserver = std::function<void(const std::string& tensor, const std::string& layer, const HostTensor&)>;
using Runner = std::function<std::map<std::string, HostTensor>(const std::map<std::string, HostTensor>& inputs,
                                                               const TensorObserver& observer)>;

// Runs both on the same inputs and compares outputs (and intermediates when `perLayer`).
ComparisonReport compareRunners(const Runner& reference, const Runner& candidate,
                                const std::map<std::string, HostTensor>& inputs, const Tolerance& tolerance,
                                bool perLayer = true);

}  // namespace kiln
