#include <kiln/error.h>
#include <kiln/profile_report.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>

namespace kiln {

using nlohmann::json;

std::string ProfileReport::toJson(int indent) const {
  json j;
  j["format"] = "kiln-profile-1";
  j["plan"] = {{"format_version", plan.formatVersion}, {"kiln_version", plan.kilnVersion}, {"backend", plan.backend},
               {"device", plan.deviceName}, {"compute_capability", plan.computeCapability},
               {"build_flags", plan.buildFlags}};
  j["input_shapes"] = inputShapes;
  j["iterations"] = iterations;
  j["total_median_ms"] = totalMedianMs;
  json layersJson = json::array();
  for (const auto& l : layers)
    layersJson.push_back({{"name", l.name}, {"type", l.type}, {"tactic", l.tactic}, {"precision", l.precision},
                          {"median_ms", l.medianMs}, {"mean_ms", l.meanMs}, {"min_ms", l.minMs},
                          {"percent", l.percent}});
  j["layers"] = layersJson;
  return j.dump(indent);
}

ProfileReport ProfileReport::fromJson(const std::string& text) {
  ProfileReport r;
  try {
    json j = json::parse(text);
    if (j.at("format") != "kiln-profile-1")
      throw Error(ErrorCode::kInvalidArgument, "not a Kiln profile (format is not kiln-profile-1)");
    const json& p = j.at("plan");
    r.plan = {p.at("format_version"), p.at("kiln_version"), p.at("backend"), p.at("device"),
              p.at("compute_capability"), p.at("build_flags")};
    r.inputShapes = j.at("input_shapes");
    r.iterations = j.at("iterations");
    r.totalMedianMs = j.at("total_median_ms");
    for (const auto& l : j.at("layers"))
      r.layers.push_back({l.at("name"), l.at("type"), l.at("tactic"), l.at("precision"), l.at("median_ms"),
                          l.at("mean_ms"), l.at("min_ms"), l.at("percent")});
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("malformed profile JSON: ") + e.what());
  }
  return r;
}

namespace {

class CollectingProfiler : public Profiler {
 public:
  void reportLayerTime(const std::string& layerName, double ms) override { times[layerName].push_back(ms); }
  std::map<std::string, std::vector<double>> times;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

ProfileReport profileEngine(const Engine& engine, const std::map<std::string, HostTensor>& inputs, int iterations,
                            int warmup) {
  if (iterations < 1) throw Error(ErrorCode::kInvalidArgument, "profiling needs at least one iteration");
  auto context = engine.createExecutionContext();
  for (int i = 0; i < warmup; ++i) context->run(inputs);
  CollectingProfiler profiler;
  context->setProfiler(&profiler);
  std::vector<double> totals;
  for (int i = 0; i < iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    context->run(inputs);
    totals.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  ProfileReport report;
  report.plan = engine.planInfo();
  report.iterations = iterations;
  report.totalMedianMs = median(totals);
  for (const auto& [name, t] : inputs) {
    if (!report.inputShapes.empty()) report.inputShapes += ",";
    report.inputShapes += name + ":" + dimsToString(t.dims());
  }
  double sum = 0;
  for (const auto& layer : engine.report().layers) {
    auto it = profiler.times.find(layer.name);
    if (it == profiler.times.end()) continue;
    const auto& t = it->second;
    LayerTiming timing{layer.name, layer.type, layer.tactic, layer.precision, median(t),
                       std::accumulate(t.begin(), t.end(), 0.0) / double(t.size()),
                       *std::min_element(t.begin(), t.end()), 0};
    sum += timing.medianMs;
    report.layers.push_back(std::move(timing));
  }
  for (auto& l : report.layers) l.percent = sum > 0 ? 100.0 * l.medianMs / sum : 0;
  return report;
}

}  // namespace kiln
