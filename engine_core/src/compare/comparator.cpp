#include <kiln/compare.h>
#include <kiln/error.h>
#include <kiln/shape.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace kiln {

TensorMetrics measureTensor(const std::string& name, const HostTensor& reference, const HostTensor& candidate,
                            const Tolerance& tol) {
  TensorMetrics m;
  m.name = name;
  m.errorHistogram.assign(9, 0);
  if (reference.dims() != candidate.dims()) {
    m.pass = false;
    m.why = "shape " + dimsToString(candidate.dims()) + ", reference " + dimsToString(reference.dims());
    return m;
  }
  if (reference.dtype() == DataType::kString || candidate.dtype() == DataType::kString) {
    std::string why = checkClose(candidate, reference, 0, 0);
    m.pass = why.empty();
    m.why = why;
    return m;
  }
  auto ref = reference.toDoubleVector();
  auto cand = candidate.toDoubleVector();
  m.elements = int64_t(ref.size());
  double sumRef2 = 0, sumErr2 = 0, dot = 0, sumCand2 = 0, sumAbs = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double r = ref[i], c = cand[i];
    bool bothNan = std::isnan(r) && std::isnan(c);
    bool sameInf = std::isinf(r) && r == c;
    if (bothNan || sameInf) continue;
    if (!std::isfinite(r) || !std::isfinite(c)) {
      ++m.failing;
      m.maxAbsError = m.toleranceRatio = std::numeric_limits<double>::infinity();
      continue;
    }
    double err = std::fabs(c - r);
    const double allowed = tol.atol + tol.rtol * std::fabs(r);
    if (err > 0)
      m.toleranceRatio = std::max(m.toleranceRatio, allowed > 0 ? err / allowed : std::numeric_limits<double>::infinity());
    m.maxAbsError = std::max(m.maxAbsError, err);
    if (std::fabs(r) > 1e-12) m.maxRelError = std::max(m.maxRelError, err / std::fabs(r));
    if (err > allowed) ++m.failing;
    sumAbs += err;
    sumRef2 += r * r;
    sumErr2 += err * err;
    sumCand2 += c * c;
    dot += r * c;
    int bucket = err < 1e-7 ? 0 : std::min(8, int(std::floor(std::log10(err))) + 8);
    ++m.errorHistogram[size_t(bucket)];
  }
  m.meanAbsError = ref.empty() ? 0 : sumAbs / double(ref.size());
  m.cosineSimilarity = (sumRef2 > 0 && sumCand2 > 0) ? dot / std::sqrt(sumRef2 * sumCand2) : (sumErr2 == 0 ? 1 : 0);
  m.snrDb = sumErr2 == 0 ? 999 : (sumRef2 == 0 ? -999 : 10 * std::log10(sumRef2 / sumErr2));
  m.pass = m.failing == 0;
  return m;
}

ComparisonReport compareRunners(const Runner& reference, const Runner& candidate,
                                const std::map<std::string, HostTensor>& inputs, const Tolerance& tolerance,
                                bool perLayer) {
  std::map<std::string, HostTensor> refTensors;
  std::vector<std::string> refOrder;
  TensorObserver collect;
  if (perLayer)
    collect = [&](const std::string& tensor, const std::string&, const HostTensor& value) {
      if (refTensors.emplace(tensor, value.clone()).second) refOrder.push_back(tensor);
    };
  auto refOut = reference(inputs, collect);
  ComparisonReport report;
  TensorObserver measure;
  if (perLayer)
    measure = [&](const std::string& tensor, const std::string& layer, const HostTensor& value) {
      auto it = refTensors.find(tensor);
      if (it == refTensors.end() || value.dtype() == DataType::kString) return;
      TensorMetrics m = measureTensor(tensor, it->second, value, tolerance);
      m.layer = layer;
      report.layers.push_back(std::move(m));
    };
  auto candOut = candidate(inputs, measure);
  for (const auto& [name, ref] : refOut) {
    auto it = candOut.find(name);
    TensorMetrics m;
    if (it == candOut.end()) {
      m.name = name;
      m.pass = false;
      m.why = "the candidate has no output named '" + name + "'";
    } else {
      m = measureTensor(name, ref, it->second, tolerance);
    }
    report.pass = report.pass && m.pass;
    report.outputs.push_back(std::move(m));
  }
  return report;
}

std::string ComparisonReport::toJson(int indent) const {
  using nlohmann::json;
  auto metricsJson = [](const TensorMetrics& m) {
    auto finite = [](double v) { return std::isfinite(v) ? v : 1e308; };
    return json{{"name", m.name},
                {"layer", m.layer},
                {"elements", m.elements},
                {"max_abs_error", finite(m.maxAbsError)},
                {"max_rel_error", finite(m.maxRelError)},
                {"mean_abs_error", finite(m.meanAbsError)},
                {"cosine_similarity", m.cosineSimilarity},
                {"snr_db", m.snrDb},
                {"failing", m.failing},
                {"tolerance_ratio", finite(m.toleranceRatio)},
                {"pass", m.pass},
                {"why", m.why},
                {"error_histogram", m.errorHistogram}};
  };
  json j;
  j["format"] = "kiln-comparison-1";
  j["pass"] = pass;
  j["outputs"] = json::array();
  for (const auto& m : outputs) j["outputs"].push_back(metricsJson(m));
  j["layers"] = json::array();
  for (const auto& m : layers) j["layers"].push_back(metricsJson(m));
  return j.dump(indent);
}

}  // namespace kiln
