// kiln debug advise MODEL --int8|--fp8|--fp4 ...: a quantization advisor. Per layer the reduced build runs
// below the kept precision: the error when only it is reduced and the time reducing it saves
// (per-layer profiles), as a table sorted by error, a Pareto plot (SVG), CSV and JSON, and the
// suggested set to keep as one constraints file for `kiln build --layer-precision-file`.
#include "console.h"
#include "debug_commands.h"
#include "debug_session.h"

#include <kiln/error.h>
#include <kiln/file_io.h>
#include <kiln/quantization_advisor.h>

#include <iomanip>
#include <iostream>

namespace kiln::cli {
namespace {

struct AdviseOptions {
  DebugOptions debug;
  std::string plotPath, csvPath;
  int layerRuns = 20;
};

void printTable(const QuantizationAdvice& advice) {
  std::cout << "per layer, worst first (error with only the layer reduced; times from " << "per-layer profiles):\n"
            << "  rank  " << std::left << std::setw(32) << "layer" << std::setw(24) << "type" << std::right
            << std::setw(11) << "error" << std::setw(10) << "cosine" << std::setw(10) << "kept ms" << std::setw(11)
            << "reduced ms" << std::setw(10) << "saved ms" << "  pareto  keep\n";
  for (size_t i = 0; i < advice.layers.size(); ++i) {
    const LayerAdvice& a = advice.layers[i];
    std::cout << "  " << std::setw(4) << i + 1 << "  " << std::left << std::setw(32) << a.name.substr(0, 31)
              << std::setw(24) << a.type.substr(0, 23) << std::right << std::scientific << std::setprecision(2)
              << std::setw(11) << a.alone.error << std::fixed << std::setprecision(5) << std::setw(10)
              << a.alone.worstCosine << std::setprecision(3) << std::setw(10) << a.keptMs << std::setw(11)
              << a.reducedMs << std::setw(10) << a.savedMs() << "  " << (a.pareto ? "yes   " : "      ") << "  "
              << (a.keep ? "KEEP" : "") << "\n";
  }
}

void runDebugAdvise(const AdviseOptions& o) {
  if (o.layerRuns < 0) throw Error(ErrorCode::kInvalidArgument, "--layer-runs must be 0 (no profiling) or more");
  const DebugSession session = prepareDebugSession(o.debug);
  const PrecisionDebugOptions& options = session.options;
  const AccuracyCriterion& criterion = options.criterion;
  const std::string kept = toString(options.keepPrecision);
  std::cout << "advising on " << o.debug.modelPath << " on " << toString(options.config.backend) << ": "
            << options.inputs.size() << " input set(s), criterion " << criterion.describe() << ", others in " << kept
            << "\n";
  StderrLogger logger;
  TrialPrinter printer(criterion);
  QuantizationAdvisorOptions advisor;
  advisor.profileIterations = o.layerRuns;
  const QuantizationAdvice advice = adviseQuantization(*session.network, options, advisor, &printer, logger);
  printTable(advice);
  std::cout << "all reduced: " << describeScore(advice.reducedScore, criterion)
            << (advice.reducedScore.pass ? " (PASS)" : " (FAIL)") << "\nall " << kept << ": "
            << describeScore(advice.allKeptScore, criterion) << (advice.allKeptScore.pass ? " (PASS)" : " (FAIL)")
            << "\n";
  if (!advice.suggestionPasses)
    throw Error(ErrorCode::kRuntimeError,
                "even with all " + std::to_string(advice.layers.size()) + " candidate layer(s) in " + kept +
                    " the engine fails " + criterion.describe() + ": no set of layers to keep can fix it (loosen the "
                    "criterion, or compare the FP32 engine with `kiln compare MODEL PLAN --per-layer`)");
  const std::string summary =
      advice.keep.empty()
          ? "nothing needs keeping in " + kept + ": the reduced engine meets " + criterion.describe() + " (" +
                describeScore(advice.suggestedScore, criterion) + ")"
          : "keep " + std::to_string(advice.keep.size()) + " layer(s) in " + kept + ": then the engine meets " +
                criterion.describe() + " (" + describeScore(advice.suggestedScore, criterion) + ")";
  std::cout << summary << "\n";
  for (const auto& layer : advice.keep) std::cout << "  " << layer << "\n";
  if (o.layerRuns > 0)
    std::cout << std::fixed << std::setprecision(3) << "end-to-end median: all " << kept << " " << advice.keptTotalMs
              << " ms, all reduced " << advice.reducedTotalMs << " ms, suggested " << advice.suggestedTotalMs
              << " ms\n";
  if (!o.plotPath.empty()) writeFileAtomically(o.plotPath, advice.toSvg());
  if (!o.csvPath.empty()) writeFileAtomically(o.csvPath, advice.toCsv());
  if (!o.debug.exportPath.empty()) writeFileAtomically(o.debug.exportPath, advice.toJson());
  writeConstraints(o.debug, session, advice.keep, summary);
}

}  // namespace

Command addDebugAdviseCommand(CLI::App& debug) {
  auto o = std::make_shared<AdviseOptions>();
  CLI::App* sub = debug.add_subcommand(
      "advise", "Per layer: the error when only it is quantized and the time it saves; what to keep in higher precision");
  addDebugOptions(sub, o->debug);
  sub->add_option("--plot", o->plotPath, "Write the Pareto plot (error against time saved per layer) as SVG");
  sub->add_option("--csv", o->csvPath, "Write the per-layer table as CSV");
  sub->add_option("--layer-runs", o->layerRuns, "Profiled runs for the per-layer times (default 20; 0: no profiling)");
  return {sub, [o] { runDebugAdvise(*o); }};
}

}  // namespace kiln::cli
