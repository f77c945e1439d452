#include "calibrate.h"

#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/file_io.h>
#include <kiln/runtime.h>

#include "calibration_cache.h"
#include "calibration_data.h"
#include "calibration_images.h"
#include "calibrators.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

namespace kiln::calibration {
namespace {

// One profile that takes every batch: per dim the smallest and largest sizes seen (opt = largest).
OptimizationProfile batchProfile(const Network& network, const std::vector<Batch>& batches) {
  OptimizationProfile profile;
  for (const auto& name : network.runtimeInputs()) {
    const Shape& declared = network.tensor(name).shape;
    if (declared.isFullyKnown()) continue;
    ShapeRange range;
    for (const Batch& batch : batches) {
      const auto& dims = batch.at(name).dims();
      if (range.min.empty()) range.min = range.max = dims;
      for (size_t d = 0; d < dims.size(); ++d) {
        range.min[d] = std::min(range.min[d], dims[d]);
        range.max[d] = std::max(range.max[d], dims[d]);
      }
    }
    range.opt = range.max;
    profile.inputs[name] = range;
  }
  return profile;
}

// The nested build's progress as the first tenth of calibration's (its cancel included: `report`
// throws then).
class ForwardProgress : public BuildObserver {
 public:
  explicit ForwardProgress(const CalibrationProgress& report) : report_(report) {}
  void progress(const BuildProgress& p) override { report_(0.1 * p.fraction, "building the fp32 engine"); }

 private:
  const CalibrationProgress& report_;
};

// The FP32 engine of `network` on the CPU, its passes already run.
std::shared_ptr<Engine> fp32Engine(const Network& network, const std::vector<Batch>& batches,
                                   const BuilderConfig& config, const CalibrationProgress& progress) {
  BuilderConfig fp32;
  fp32.backend = BackendKind::kCpu;
  fp32.optimizationLevel = 0;  // the builder's passes made `network`: keep its tensors as they are
  fp32.workspaceBytes = config.workspaceBytes;
  fp32.timingCachePath = config.timingCachePath;
  OptimizationProfile profile = batchProfile(network, batches);
  if (!profile.inputs.empty()) fp32.profiles.push_back(std::move(profile));
  ForwardProgress forward(progress);
  return Runtime().load(Builder().build(network, fp32, &forward).plan);
}

void checkFinite(const HostTensor& t, const std::string& name, size_t batch) {
  const float* v = t.data<float>();
  for (int64_t i = 0; i < t.elementCount(); ++i)
    if (!std::isfinite(v[i]))
      throw Error(ErrorCode::kInvalidArgument, "calibration: tensor '" + name + "' holds a non-finite value in batch " +
                                                   std::to_string(batch) + "; check the calibration data");
}

// Runs every batch through `engine`, giving `see` each float32 tensor of `tensors` (graph inputs
// among them straight from the batch).
void runBatches(Engine& engine, const std::vector<Batch>& batches, const std::set<std::string>& tensors,
                const std::function<void(const std::string&, const HostTensor&, size_t)>& see,
                const std::function<void(size_t)>& done) {
  auto context = engine.createExecutionContext();
  for (size_t b = 0; b < batches.size(); ++b) {
    context->setTensorObserver([&](const std::string& tensor, const std::string&, const HostTensor& value) {
      if (tensors.count(tensor) && value.dtype() == DataType::kFloat32) see(tensor, value, b);
    });
    for (const auto& [name, value] : batches[b])
      if (tensors.count(name) && value.dtype() == DataType::kFloat32) see(name, value, b);
    context->run(batches[b]);
    done(b);
  }
}

std::map<std::string, float> calibrate(const Network& network, const std::set<std::string>& tensors,
                                       const std::vector<Batch>& batches, const BuilderConfig& config,
                                       const CalibrationProgress& progress) {
  auto engine = fp32Engine(network, batches, config, progress);
  const CalibrationConfig& c = config.calibration;
  const bool histograms = c.calibrator != CalibratorKind::kMinMax;
  const double share = histograms ? 0.45 : 0.9;  // of the fraction, per pass over the batches
  // Pass 1: the largest |x| of each tensor (the minmax threshold, and the histograms' range).
  std::map<std::string, float> amax;
  runBatches(
      *engine, batches, tensors,
      [&](const std::string& name, const HostTensor& value, size_t batch) {
        checkFinite(value, name, batch);
        float& m = amax[name];
        const float* v = value.data<float>();
        for (int64_t i = 0; i < value.elementCount(); ++i) m = std::max(m, std::fabs(v[i]));
      },
      [&](size_t b) {
        progress(0.1 + share * double(b + 1) / double(batches.size()),
                 "batch " + std::to_string(b + 1) + "/" + std::to_string(batches.size()));
      });
  std::map<std::string, float> thresholds = amax;
  if (histograms) {
    // Pass 2: histograms of |x| over [0, amax].
    std::map<std::string, AbsHistogram> hists;
    for (const auto& [name, m] : amax) hists.emplace(name, AbsHistogram(m));
    runBatches(
        *engine, batches, tensors,
        [&](const std::string& name, const HostTensor& value, size_t) {
          hists.at(name).add(value.data<float>(), value.elementCount());
        },
        [&](size_t b) {
          progress(0.55 + share * double(b + 1) / double(batches.size()),
                   "histograms, batch " + std::to_string(b + 1) + "/" + std::to_string(batches.size()));
        });
    for (const auto& [name, hist] : hists)
      thresholds[name] = amax[name] == 0 ? 0.0f
                         : c.calibrator == CalibratorKind::kEntropy ? entropyThreshold(hist)
                                                                    : percentileThreshold(hist, c.percentile);
  }
  std::map<std::string, float> scales;
  for (const auto& [name, threshold] : thresholds) scales[name] = scaleForThreshold(threshold);
  return scales;
}

std::string readText(const std::string& path) {
  const auto bytes = readFileBytes(path);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

std::string calibratorDescription(const CalibrationConfig& config) {
  std::string text = toString(config.calibrator);
  if (config.calibrator == CalibratorKind::kPercentile) {
    std::ostringstream p;
    p << config.percentile;
    text += " " + p.str();
  }
  return text;
}

CalibrationSummary activationScales(const Network& model, const Network& network, const std::set<std::string>& tensors,
                                    const BuilderConfig& config, const CalibrationProgress& progress) {
  const CalibrationConfig& c = config.calibration;
  if (c.calibrator == CalibratorKind::kPercentile && !(c.percentile > 0 && c.percentile <= 100))
    throw Error(ErrorCode::kInvalidArgument, "the calibration percentile must be in (0, 100], got " +
                                                 std::to_string(c.percentile));
  CalibrationSummary summary;
  summary.calibrator = calibratorDescription(c);
  summary.cachePath = c.cachePath;
  const std::string fingerprint = networkFingerprint(model);
  std::error_code ec;
  if (!c.cachePath.empty() && std::filesystem::exists(c.cachePath, ec)) {
    CalibrationCache cache = parseCalibrationCache(readText(c.cachePath), c.cachePath);
    if (cache.model != fingerprint)
      throw Error(ErrorCode::kInvalidArgument,
                  "calibration cache " + c.cachePath + " was made for another model (fingerprint " + cache.model +
                      ", this model's is " + fingerprint + "); give another --calib-cache file, or delete it to "
                      "calibrate this model again");
    if (cache.calibrator != summary.calibrator)
      throw Error(ErrorCode::kInvalidArgument,
                  "calibration cache " + c.cachePath + " holds " + cache.calibrator + " scales but the " +
                      summary.calibrator + " calibrator was asked for; ask for " + cache.calibrator +
                      ", give another --calib-cache file, or delete it to calibrate again");
    summary.source = "cache";
    summary.scales = std::move(cache.scales);
    return summary;
  }
  if (c.dataPath.empty())
    throw Error(ErrorCode::kInvalidArgument,
                c.cachePath.empty()
                    ? "a quantized (int8, fp8, fp4) build needs calibration: give calibration data (--calib-data "
                      "DIR: .npy files or images) or a calibration cache made by an earlier build (--calib-cache FILE)"
                    : "calibration cache " + c.cachePath + " does not exist, and no calibration data "
                      "(--calib-data DIR) was given to make it");
  const std::vector<Batch> batches = calibrationDataKind(c.dataPath) == CalibrationDataKind::kImages
                                        ? loadCalibrationImages(model, config, progress)
                                        : loadCalibrationData(model, c.dataPath, c.maxBatches);
  if (batches.empty())
    throw Error(ErrorCode::kInvalidArgument, "calibration data: " + c.dataPath + " gives no batches");
  summary.source = "data";
  summary.batches = int64_t(batches.size());
  summary.scales = calibrate(network, tensors, batches, config, progress);
  return summary;
}

void writeCalibrationCache(const Network& model, const CalibrationSummary& summary) {
  if (summary.source != "data" || summary.cachePath.empty()) return;
  CalibrationCache cache{networkFingerprint(model), summary.calibrator, summary.scales};
  writeFileAtomically(summary.cachePath, formatCalibrationCache(cache));
}

}  // namespace kiln::calibration
