// The quantization advice as JSON (Kiln Studio, scripts) and CSV (spreadsheets).
#include "precision_json.h"

#include <kiln/quantization_advisor.h>

#include <cmath>
#include <sstream>

namespace kiln {
namespace {

// RFC 4180: quoted where it holds a comma, quote or line break.
std::string csvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return v < 0 ? "-inf" : "inf";
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

}  // namespace

std::string QuantizationAdvice::toJson(int indent) const {
  using nlohmann::json;
  json j;
  j["format"] = "kiln-quantization-advice-1";
  j["criterion"] = criterion.describe();
  j["limit"] = criterion.limit();
  j["keep_precision"] = toString(keepPrecision);
  j["reduced_score"] = scoreJson(reducedScore);
  j["all_kept_score"] = scoreJson(allKeptScore);
  j["suggested_score"] = scoreJson(suggestedScore);
  j["suggestion_passes"] = suggestionPasses;
  j["keep"] = keep;
  j["total_ms"] = {{"all_kept", keptTotalMs}, {"reduced", reducedTotalMs}, {"suggested", suggestedTotalMs}};
  j["layers"] = json::array();
  for (const auto& a : layers)
    j["layers"].push_back({{"name", a.name},
                           {"type", a.type},
                           {"precision", a.precision},
                           {"alone", scoreJson(a.alone)},
                           {"kept_ms", a.keptMs},
                           {"reduced_ms", a.reducedMs},
                           {"saved_ms", a.savedMs()},
                           {"pareto", a.pareto},
                           {"keep", a.keep}});
  j["trials"] = json::array();
  for (const auto& t : trials) j["trials"].push_back(trialJson(t));
  return j.dump(indent);
}

std::string QuantizationAdvice::toCsv() const {
  std::string csv =
      "rank,layer,type,precision,error_alone,passes_alone,worst_cosine_alone,max_abs_error_alone,kept_ms,reduced_ms,"
      "saved_ms,pareto,keep\n";
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerAdvice& a = layers[i];
    csv += std::to_string(i + 1) + "," + csvField(a.name) + "," + csvField(a.type) + "," + a.precision + "," +
           number(a.alone.error) + "," + (a.alone.pass ? "yes" : "no") + "," + number(a.alone.worstCosine) + "," +
           number(a.alone.maxAbsError) + "," + number(a.keptMs) + "," + number(a.reducedMs) + "," +
           number(a.savedMs()) + "," + (a.pareto ? "yes" : "no") + "," + (a.keep ? "yes" : "no") + "\n";
  }
  return csv;
}

}  // namespace kiln
