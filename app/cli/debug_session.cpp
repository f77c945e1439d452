#include "debug_session.h"

#include "artifact.h"
#include "console.h"

#include <kiln/error.h>
#include <kiln/file_io.h>
#include <kiln/input_batches.h>
#include <kiln/layer_precision_file.h>
#include <kiln/onnx_importer.h>

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace kiln::cli {
namespace {

[[noreturn]] void usage(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, message); }

AccuracyCriterion criterionOf(const DebugOptions& o) {
  const bool tolerances = o.atolOption->count() + o.rtolOption->count() > 0;
  std::string metric = o.metric;
  if (metric.empty()) metric = o.thresholdOption->count() ? "cosine" : "tolerance";
  AccuracyCriterion c;
  if (metric == "cosine") {
    if (tolerances) usage("--atol and --rtol belong to --metric tolerance; with --metric cosine give --threshold");
    if (!(o.threshold > -1 && o.threshold <= 1)) usage("--threshold must be a cosine similarity in (-1, 1], e.g. 0.99");
    c.metric = AccuracyCriterion::Metric::kCosine;
    c.minCosine = o.threshold;
  } else if (metric == "tolerance") {
    if (o.thresholdOption->count()) usage("--threshold belongs to --metric cosine; with --metric tolerance give --atol/--rtol");
    if (o.tolerance.atol < 0 || o.tolerance.rtol < 0) usage("--atol and --rtol must not be negative");
    c.tolerance = o.tolerance;
  } else {
    usage("--metric '" + metric + "' is not a metric; use tolerance (--atol/--rtol) or cosine (--threshold)");
  }
  return c;
}

// The precision layers are held back in: --keep-precision, else the float precision an INT8 / FP8 /
// FP4 build also allows, else fp32.
Precision keepPrecisionOf(const DebugOptions& o) {
  if (!o.keepPrecision.empty()) {
    const auto p = parsePrecision(o.keepPrecision);
    if (!p || (*p != Precision::kFP32 && *p != Precision::kFP16 && *p != Precision::kBF16))
      usage("--keep-precision '" + o.keepPrecision + "' must be fp32, fp16 or bf16");
    return *p;
  }
  const bool quantized = o.precision.int8 || o.precision.fp8 || o.precision.fp4;
  if (quantized && o.precision.fp16) return Precision::kFP16;
  if (quantized && o.precision.bf16) return Precision::kBF16;
  return Precision::kFP32;
}

std::vector<InputSet> inputSetsOf(const DebugOptions& o, const Network& network) {
  if (!o.dataDir.empty()) {
    if (!o.inputs.inputFiles.empty() || !o.inputs.shapes.empty())
      usage("--data gives every input; leave out --input and --shapes (or --data)");
    if (o.dataBatches < 0) usage("--data-batches must be 0 (all) or more");
    auto sets = loadInputBatches(network, o.dataDir, o.dataBatches);
    if (sets.empty()) usage("--data " + o.dataDir + " gives no batches");
    return sets;
  }
  std::map<std::string, Value> values;
  for (auto& input : prepareInputs(network, o.inputs)) values[input.name] = std::move(input.value);
  return {tensorInputs(values)};
}

// A model with dynamic inputs is built for the shapes the input sets have (smallest to largest).
std::optional<OptimizationProfile> profileOf(const Network& network, const std::vector<InputSet>& sets) {
  OptimizationProfile profile;
  for (const auto& name : network.runtimeInputs()) {
    const Shape& shape = network.tensor(name).shape;
    if (shape.hasRank() && shape.isFullyKnown()) continue;
    ShapeRange range{sets.front().at(name).dims(), sets.front().at(name).dims(), sets.front().at(name).dims()};
    for (const auto& set : sets) {
      const auto& dims = set.at(name).dims();
      if (dims.size() != range.min.size()) usage("input '" + name + "' changes rank between the input sets");
      for (size_t d = 0; d < dims.size(); ++d) {
        range.min[d] = std::min(range.min[d], dims[d]);
        range.max[d] = std::max(range.max[d], dims[d]);
      }
    }
    profile.inputs[name] = std::move(range);
  }
  if (profile.inputs.empty()) return std::nullopt;
  return profile;
}

std::string scientific(double v) {
  if (!std::isfinite(v)) return "inf";
  std::ostringstream s;
  s << std::scientific << std::setprecision(2) << v;
  return s.str();
}

}  // namespace

void addDebugOptions(CLI::App* sub, DebugOptions& o) {
  sub->add_option("MODEL", o.modelPath, "ONNX model file (.onnx)")->required();
  addPrecisionOptions(sub, o.precision);
  sub->add_option("--keep-precision", o.keepPrecision,
                  "What held-back layers run in: fp32 (default), fp16 or bf16 (default for --int8 / --fp8 / --fp4 with "
                  "--fp16 / --bf16)");
  sub->add_option("--input", o.inputs.inputFiles, "NAME=FILE (.npy or .pb), repeatable; others are random")
      ->allow_extra_args(false);
  sub->add_option("--shapes", o.inputs.shapes, "NAME:1x3x224x224,...: shapes of random inputs")->allow_extra_args(false);
  sub->add_option("--seed", o.inputs.seed, "Seed of the random inputs (default 0)");
  sub->add_option("--data", o.dataDir,
                  "Folder of .npy input batches named as for --calib-data (use data held out of calibration); "
                  "every trial runs them all");
  sub->add_option("--data-batches", o.dataBatches, "Use the first N batches of --data (default: all)");
  sub->add_option("--metric", o.metric, "tolerance (every element within --atol/--rtol; default) or cosine "
                                        "(every output's cosine similarity >= --threshold)");
  o.atolOption = sub->add_option("--atol", o.tolerance.atol, "Absolute tolerance (default 1e-4)");
  o.rtolOption = sub->add_option("--rtol", o.tolerance.rtol, "Relative tolerance (default 1e-3)");
  o.thresholdOption = sub->add_option("--threshold", o.threshold, "Smallest cosine similarity that passes (default 0.99)");
  sub->add_option("--reference", o.reference,
                  "The ground truth: model (the ONNX model on Kiln's reference executor; default) or fp32 (an FP32 "
                  "engine of the same backend, faster for large models)");
  sub->add_option("--write-constraints", o.constraintsPath,
                  "Write the layers to hold back as a file for `kiln build --layer-precision-file`");
  sub->add_option("--export", o.exportPath, "Write every trial and the result as JSON");
}

DebugSession prepareDebugSession(const DebugOptions& o) {
  if (isPlanFile(o.modelPath))
    usage("'" + o.modelPath + "' is a plan; the precision tools build the ONNX model themselves, give that instead");
  DebugSession session;
  PrecisionDebugOptions& options = session.options;
  applyPrecisionOptions(o.precision, options.config);
  if (!o.precision.int8 && !o.precision.fp8 && !o.precision.fp4 && !o.precision.fp16 && !o.precision.bf16)
    usage("give the reduced precision to debug: --int8, --fp8 or --fp4 (with --calib-data or --calib-cache), --fp16 "
          "or --bf16");
  options.config.allowTF32 = false;  // FP32 layers stay FP32: the trials differ only in what they hold back
  options.criterion = criterionOf(o);
  options.keepPrecision = keepPrecisionOf(o);
  if (o.reference == "model") options.reference = ReferenceKind::kModel;
  else if (o.reference == "fp32") options.reference = ReferenceKind::kFp32Engine;
  else usage("--reference '" + o.reference + "' must be model or fp32");
  session.network = OnnxImporter().importFile(o.modelPath);
  options.inputs = inputSetsOf(o, *session.network);
  if (auto profile = profileOf(*session.network, options.inputs)) options.config.profiles = {*profile};
  return session;
}

struct TrialPrinter::Bar {
  ProgressBar bar;
};

TrialPrinter::TrialPrinter(const AccuracyCriterion& criterion) : bar_(std::make_unique<Bar>()), criterion_(criterion) {}

TrialPrinter::~TrialPrinter() = default;

void TrialPrinter::progress(const std::string& what, double fraction) { bar_->bar.draw(fraction, what); }

void TrialPrinter::trial(const PrecisionTrial& t) {
  bar_->bar.clear();
  if (!headed_) {
    std::cout << "trial  phase       held  " << std::left << std::setw(10)
              << (criterion_.metric == AccuracyCriterion::Metric::kCosine ? "1-cosine" : "tol ratio") << std::right
              << std::setw(10) << "cosine" << std::setw(11) << "max abs" << "  result  what\n";
    headed_ = true;
  }
  std::cout << std::setw(5) << t.index << "  " << std::left << std::setw(10) << t.phase << std::right << std::setw(6)
            << t.kept.size() << "  " << std::left << std::setw(10) << scientific(t.score.error) << std::right
            << std::fixed << std::setprecision(6) << std::setw(10) << t.score.worstCosine << std::setw(11)
            << scientific(t.score.maxAbsError) << "  " << (t.score.pass ? "PASS  " : "FAIL  ") << "  " << t.note
            << (t.score.why.empty() ? "" : " (" + t.score.why + ")") << std::endl;
}

std::string describeScore(const AccuracyScore& score, const AccuracyCriterion& criterion) {
  std::ostringstream s;
  s << "worst cosine " << std::fixed << std::setprecision(6) << score.worstCosine << ", max abs error "
    << scientific(score.maxAbsError);
  if (criterion.metric == AccuracyCriterion::Metric::kTolerance)
    s << ", tolerance ratio " << scientific(score.error) << " (limit 1)";
  if (!score.worstOutput.empty()) s << ", worst output '" << score.worstOutput << "'";
  return s.str();
}

void writeConstraints(const DebugOptions& o, const DebugSession& session, const std::vector<std::string>& keep,
                      const std::string& summary) {
  if (o.constraintsPath.empty()) return;
  const BuilderConfig& config = session.options.config;
  std::vector<std::pair<std::string, Precision>> lines(config.layerPrecisions.begin(), config.layerPrecisions.end());
  for (const auto& layer : keep)
    if (!config.layerPrecisions.count(layer)) lines.emplace_back(layer, session.options.keepPrecision);
  const std::string text = formatLayerPrecisionFile(
      lines, {"kiln layer precision constraints: kiln build " + o.modelPath + " <the same precision options> "
              "--layer-precision-file " + o.constraintsPath,
              summary,
              "Layer names are the engine's after the graph passes at optimisation level " +
                  std::to_string(config.optimizationLevel) + " on the " + toString(config.backend) + " backend."});
  writeFileAtomically(o.constraintsPath, text);
  std::cout << "constraints written to " << o.constraintsPath << " (" << lines.size() << " layer(s))\n";
}

}  // namespace kiln::cli
