// kiln debug precision MODEL --int8|--fp8|--fp4|--fp16|--bf16 ...: Polygraphy's `debug precision`, automated.
// Builds the model at the reduced precision with layers held back (per-layer precision
// constraints), scores each engine against the FP32 reference, bisects over the layers in
// topological order and refines greedily, prints every trial, and writes the layers to hold back
// as a file for `kiln build --layer-precision-file`.
#include "console.h"
#include "debug_commands.h"
#include "debug_session.h"

#include <kiln/error.h>
#include <kiln/file_io.h>
#include <kiln/precision_bisect.h>

#include <iostream>

namespace kiln::cli {
namespace {

struct PrecisionCommandOptions {
  DebugOptions debug;
  bool noRefine = false;
};

void runDebugPrecision(const PrecisionCommandOptions& o) {
  const DebugSession session = prepareDebugSession(o.debug);
  const PrecisionDebugOptions& options = session.options;
  const AccuracyCriterion& criterion = options.criterion;
  std::cout << "debugging precision of " << o.debug.modelPath << " on " << toString(options.config.backend) << ": "
            << options.inputs.size() << " input set(s), criterion " << criterion.describe() << ", held-back layers in "
            << toString(options.keepPrecision) << "\n";
  StderrLogger logger;
  TrialPrinter printer(criterion);
  PrecisionBisectOptions bisect;
  bisect.refine = !o.noRefine;
  const PrecisionBisectResult result = bisectPrecision(*session.network, options, bisect, &printer, logger);
  std::cout << result.candidates.size() << " candidate layer(s) run below " << toString(options.keepPrecision)
            << "; " << result.trials.size() << " build(s) tried\n";
  if (!result.allKeptPasses)
    throw Error(ErrorCode::kRuntimeError,
                "even with all " + std::to_string(result.candidates.size()) + " candidate layer(s) in " +
                    toString(options.keepPrecision) + " the engine fails " + criterion.describe() + " (" +
                    describeScore(result.finalScore, criterion) +
                    "): no set of layers can fix it; the criterion is stricter than " + toString(options.keepPrecision) +
                    " arithmetic on this model gives, or layers outside the candidates differ (loosen the criterion, "
                    "or compare the FP32 engine with `kiln compare MODEL PLAN --per-layer`)");
  std::string summary;
  if (result.reducedPasses) {
    summary = "nothing needs holding back: the reduced engine meets " + criterion.describe() + " (" +
              describeScore(result.reducedScore, criterion) + ")";
  } else {
    summary = "with these " + std::to_string(result.keep.size()) + " layer(s) in " + toString(options.keepPrecision) +
              " the engine meets " + criterion.describe() + " (" + describeScore(result.finalScore, criterion) +
              "; with none: " + describeScore(result.reducedScore, criterion) + ")";
    std::cout << "hold back " << result.keep.size() << " of " << result.candidates.size() << " layer(s) in "
              << toString(options.keepPrecision) << ":\n";
    for (const auto& layer : result.keep) std::cout << "  " << layer << "\n";
  }
  std::cout << summary << "\n";
  if (!o.debug.exportPath.empty()) writeFileAtomically(o.debug.exportPath, result.toJson());
  writeConstraints(o.debug, session, result.keep, summary);
}

}  // namespace

Command addDebugPrecisionCommand(CLI::App& debug) {
  auto o = std::make_shared<PrecisionCommandOptions>();
  CLI::App* sub = debug.add_subcommand(
      "precision", "Find the layers a reduced-precision engine must keep in higher precision to meet a tolerance");
  addDebugOptions(sub, o->debug);
  sub->add_flag("--no-refine", o->noRefine,
                "Report the bisection's prefix of layers, as Polygraphy does, without releasing the unneeded ones");
  return {sub, [o] { runDebugPrecision(*o); }};
}

}  // namespace kiln::cli
