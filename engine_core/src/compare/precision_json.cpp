#include "precision_json.h"

#include <cmath>

namespace kiln {
namespace {

double finite(double v) { return std::isfinite(v) ? v : (v < 0 ? -1e308 : 1e308); }

}  // namespace

nlohmann::json scoreJson(const AccuracyScore& s) {
  return {{"error", finite(s.error)},       {"pass", s.pass},
          {"worst_cosine", s.worstCosine},  {"max_abs_error", finite(s.maxAbsError)},
          {"worst_snr_db", finite(s.worstSnrDb)}, {"worst_output", s.worstOutput},
          {"why", s.why}};
}

nlohmann::json trialJson(const PrecisionTrial& t) {
  return {{"index", t.index}, {"phase", t.phase},          {"note", t.note},
          {"kept", t.kept},   {"score", scoreJson(t.score)}, {"build_ms", t.buildMs}};
}

}  // namespace kiln
