#include "precision_trials.h"

#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/runners.h>

#include <stdlib.h>

#include <chrono>
#include <filesystem>

namespace kiln {
namespace {

// Higher is more exact; a layer below the kept precision is a candidate.
int rankOf(const std::string& precision) {
  if (precision == "fp32") return 4;
  if (precision == "tf32") return 3;
  if (precision == "fp16" || precision == "bf16") return 2;
  if (precision == "fp4") return 0;
  return 1;  // int8, fp8
}

bool reducesSomething(const BuilderConfig& c) {
  return c.allowINT8 || c.allowFP16 || c.allowBF16 || c.allowFP8 || c.allowFP4;
}

// Build progress and cancel passed on to the tool's observer.
class TrialBuildObserver : public BuildObserver {
 public:
  TrialBuildObserver(PrecisionDebugObserver* observer, std::string what) : observer_(observer), what_(std::move(what)) {}
  void progress(const BuildProgress& p) override {
    if (observer_) observer_->progress(what_ + ": " + p.phase, p.fraction);
  }
  bool cancelled() override { return observer_ && observer_->cancelled(); }

 private:
  PrecisionDebugObserver* observer_;
  std::string what_;
};

// A private folder for the trials' caches, removed with them.
std::string makeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-precision-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw Error(ErrorCode::kIoError, "cannot make a temporary folder in " +
                                         std::filesystem::temp_directory_path().string() + " for the trials' caches");
  return pattern;
}

// The same config with every reduced precision switched off: the FP32 reference engine.
BuilderConfig fp32Config(BuilderConfig config) {
  config.allowINT8 = config.allowFP16 = config.allowBF16 = config.allowFP8 = config.allowFP4 = config.allowTF32 = false;
  config.layerPrecisions.clear();
  config.calibration = {};
  return config;
}

}  // namespace

std::string nameLayers(const std::vector<std::string>& layers, size_t shown) {
  std::string s;
  for (size_t i = 0; i < layers.size() && i < shown; ++i) s += (i ? ", '" : "'") + layers[i] + "'";
  if (layers.size() > shown) s += " and " + std::to_string(layers.size() - shown) + " more";
  return s.empty() ? "none" : s;
}

PrecisionTrials::PrecisionTrials(const Network& network, const PrecisionDebugOptions& options,
                                 PrecisionDebugObserver* observer, Logger& logger)
    : network_(std::make_shared<Network>(network)), options_(options), observer_(observer), logger_(logger) {
  if (options.inputs.empty())
    throw Error(ErrorCode::kInvalidArgument, "the precision tools need at least one set of inputs to compare on");
  if (!reducesSomething(options.config))
    throw Error(ErrorCode::kInvalidArgument,
                "the build config allows no reduced precision; ask for int8, fp8, fp4, fp16 or bf16 (--int8, --fp8, "
                "--fp4, --fp16, --bf16)");
  if (options.keepPrecision == Precision::kINT8 || options.keepPrecision == Precision::kFP8 ||
      options.keepPrecision == Precision::kFP4)
    throw Error(ErrorCode::kInvalidArgument, std::string("layers cannot be held back in ") +
                                                 toString(options.keepPrecision) + "; keep them in fp32, fp16 or bf16");
  if (options.criterion.metric == AccuracyCriterion::Metric::kCosine &&
      !(options.criterion.minCosine > -1 && options.criterion.minCosine <= 1))
    throw Error(ErrorCode::kInvalidArgument, "the cosine threshold must be in (-1, 1], e.g. 0.99");
  if (options.criterion.tolerance.atol < 0 || options.criterion.tolerance.rtol < 0)
    throw Error(ErrorCode::kInvalidArgument, "atol and rtol must not be negative");
  tempDir_ = makeTempDir();
  BuilderConfig& c = options_.config;
  if (c.timingCachePath.empty()) c.timingCachePath = tempDir_ + "/timing.cache";
  if ((c.allowINT8 || c.allowFP8 || c.allowFP4) && c.calibration.cachePath.empty())
    c.calibration.cachePath = tempDir_ + "/calibration.cache";

  if (observer_) observer_->progress("reference outputs", 0);
  if (options.reference == ReferenceKind::kModel) {
    const Runner reference = makeReferenceRunner(network_);
    for (const InputSet& inputs : options.inputs) {
      checkCancelled();
      reference_.push_back(reference(inputs, {}));
    }
  } else {
    TrialBuildObserver buildObserver(observer_, "FP32 reference engine");
    const BuildResult built = Builder(logger_).build(*network_, fp32Config(c), &buildObserver);
    reference_ = runEngine(*Runtime().load(built.plan));
  }
}

PrecisionTrials::~PrecisionTrials() {
  std::error_code ec;
  std::filesystem::remove_all(tempDir_, ec);
}

void PrecisionTrials::checkCancelled() const {
  if (observer_ && observer_->cancelled()) throw Error(ErrorCode::kCancelled, "the precision trials were cancelled");
}

std::vector<InputSet> PrecisionTrials::runEngine(const Engine& engine) const {
  auto context = engine.createExecutionContext();
  std::vector<InputSet> outputs;
  for (const InputSet& inputs : options_.inputs) outputs.push_back(context->run(inputs));
  return outputs;
}

PrecisionTrials::Outcome PrecisionTrials::runReduced() {
  BuildReport report;
  Outcome outcome = build("reduced", "nothing held back", {}, &report);
  const int keep = rankOf(toString(options_.keepPrecision));
  for (const LayerSummary& layer : report.layers)
    if (layer.role == "compute" && layer.phase == "launch" && rankOf(layer.precision) < keep &&
        !options_.config.layerPrecisions.count(layer.name))
      candidates_.push_back(layer.name);
  if (candidates_.empty())
    throw Error(ErrorCode::kInvalidArgument,
                std::string("the reduced-precision build runs no layer below ") + toString(options_.keepPrecision) +
                    " (`kiln inspect` on its plan says why each layer kept its precision): there is nothing to hold back");
  return outcome;
}

PrecisionTrials::Outcome PrecisionTrials::run(const std::string& phase, const std::string& note,
                                              const std::set<std::string>& kept) {
  return build(phase, note, kept, nullptr);
}

PrecisionTrials::Outcome PrecisionTrials::build(const std::string& phase, const std::string& note,
                                                const std::set<std::string>& kept, BuildReport* report) {
  checkCancelled();
  BuilderConfig config = options_.config;
  for (const auto& layer : kept) config.layerPrecisions[layer] = options_.keepPrecision;
  Outcome outcome;
  PrecisionTrial& trial = outcome.trial;
  trial.index = int(trials_.size()) + 1;
  trial.phase = phase;
  trial.note = note;
  trial.kept = inOrder(kept);
  TrialBuildObserver buildObserver(observer_, "trial " + std::to_string(trial.index) + " (" + phase + ")");
  const auto start = std::chrono::steady_clock::now();
  // Only the first build speaks: later ones would repeat its warnings.
  BuildResult built = Builder(trials_.empty() ? logger_ : silentLogger()).build(*network_, config, &buildObserver);
  trial.buildMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  outcome.engine = Runtime().load(built.plan);
  trial.score = scoreOutputs(options_.criterion, reference_, runEngine(*outcome.engine));
  if (report) *report = std::move(built.report);
  trials_.push_back(trial);
  if (observer_) observer_->trial(trial);
  return outcome;
}

std::vector<std::string> PrecisionTrials::inOrder(const std::set<std::string>& layers) const {
  std::vector<std::string> ordered;
  for (const auto& name : candidates_)
    if (layers.count(name)) ordered.push_back(name);
  return ordered;
}

}  // namespace kiln
