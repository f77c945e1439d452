// Scoring a candidate's outputs against the reference's for the precision tools.
#include <kiln/precision_debug.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace kiln {

std::string AccuracyCriterion::describe() const {
  std::ostringstream s;
  if (metric == Metric::kCosine) s << "cosine >= " << minCosine;
  else s << "atol " << tolerance.atol << ", rtol " << tolerance.rtol;
  return s.str();
}

double AccuracyCriterion::limit() const { return metric == Metric::kCosine ? 1 - minCosine : 1; }

AccuracyScore scoreOutputs(const AccuracyCriterion& criterion, const std::vector<InputSet>& reference,
                           const std::vector<InputSet>& candidate) {
  constexpr double kInfinite = std::numeric_limits<double>::infinity();
  AccuracyScore score;
  auto worse = [&](double error, const std::string& output) {
    if (error > score.error || score.worstOutput.empty()) {
      score.error = std::max(score.error, error);
      score.worstOutput = output;
    }
  };
  for (size_t set = 0; set < reference.size(); ++set) {
    for (const auto& [name, expected] : reference[set]) {
      const HostTensor* actual = nullptr;
      if (set < candidate.size())
        if (auto it = candidate[set].find(name); it != candidate[set].end()) actual = &it->second;
      if (!actual) {
        score.why = "the engine has no output '" + name + "'";
        worse(kInfinite, name);
        continue;
      }
      const TensorMetrics m = measureTensor(name, expected, *actual, criterion.tolerance);
      if (!m.why.empty()) {
        score.why = "output '" + name + "' has " + m.why;
        worse(kInfinite, name);
        continue;
      }
      // measureTensor leaves NaN/Inf mismatches out of the cosine; they fail either metric.
      const bool nonFinite = std::isinf(m.maxAbsError);
      double error = criterion.metric == AccuracyCriterion::Metric::kCosine ? std::max(0.0, 1 - m.cosineSimilarity)
                                                                            : m.toleranceRatio;
      if (nonFinite || std::isnan(error)) error = kInfinite;
      worse(error, name);
      score.worstCosine = std::min(score.worstCosine, nonFinite ? -1.0 : m.cosineSimilarity);
      score.maxAbsError = std::max(score.maxAbsError, m.maxAbsError);
      score.worstSnrDb = std::min(score.worstSnrDb, m.snrDb);
    }
  }
  score.pass = score.why.empty() && score.error <= criterion.limit();
  return score;
}

}  // namespace kiln
