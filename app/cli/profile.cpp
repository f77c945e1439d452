// kiln profile PLAN [inputs] [--iterations N] [--export-profile JSON]: per-layer timings of an
// engine, slowest first (like trtexec --dumpProfile), optionally saved for Kiln Studio.
#include "artifact.h"
#include "commands.h"
#include "run_inputs.h"

#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/profile_report.h>

#include <algorithm>
#include <iomanip>
#include <iostream>

namespace kiln::cli {
namespace {

struct ProfileOptions {
  std::string planPath, exportPath;
  InputRequest inputs;
  int iterations = 20, warmup = 3;
};

void runProfile(const ProfileOptions& o) {
  Artifact plan = loadArtifact(o.planPath);
  if (!plan.isPlan())
    throw Error(ErrorCode::kInvalidArgument, "'" + o.planPath + "' is not a plan; build one first with `kiln build MODEL --save PLAN`");
  std::map<std::string, Value> values;
  InputRequest request = o.inputs;
  request.defaultShapes = plan.defaultShapes;
  for (auto& input : prepareInputs(*plan.network, request)) values[input.name] = std::move(input.value);
  ProfileReport report = profileEngine(*plan.engine, tensorInputs(values), o.iterations, o.warmup);
  auto layers = report.layers;
  std::sort(layers.begin(), layers.end(), [](const auto& x, const auto& y) { return x.medianMs > y.medianMs; });
  std::cout << "median end-to-end: " << std::fixed << std::setprecision(3) << report.totalMedianMs << " ms over "
            << report.iterations << " runs (" << report.inputShapes << ")\n";
  std::cout << "  " << std::left << std::setw(36) << "layer" << std::setw(20) << "type" << std::setw(8) << "prec"
            << std::right << std::setw(10) << "median ms" << std::setw(8) << "%" << "  tactic\n";
  for (const auto& l : layers)
    std::cout << "  " << std::left << std::setw(36) << l.name.substr(0, 35) << std::setw(20) << l.type.substr(0, 19)
              << std::setw(8) << l.precision << std::right << std::setprecision(3) << std::setw(10) << l.medianMs
              << std::setprecision(1) << std::setw(8) << l.percent << "  " << l.tactic << "\n";
  if (!o.exportPath.empty()) {
    std::string json = report.toJson();
    writeFileAtomically(o.exportPath, std::vector<uint8_t>(json.begin(), json.end()));
    std::cout << "profile written to " << o.exportPath << "\n";
  }
}

}  // namespace

Command addProfileCommand(CLI::App& app) {
  auto o = std::make_shared<ProfileOptions>();
  CLI::App* sub = app.add_subcommand("profile", "Time every layer of a plan over many runs");
  sub->add_option("PLAN", o->planPath, "Plan file made by `kiln build`")->required();
  sub->add_option("--input", o->inputs.inputFiles, "NAME=FILE (.npy or .pb), repeatable; others are random")
      ->allow_extra_args(false);
  sub->add_option("--shapes", o->inputs.shapes, "NAME:1x3x224x224,...: shapes of random inputs")->allow_extra_args(false);
  sub->add_option("--seed", o->inputs.seed, "Seed of the random inputs (default 0)");
  sub->add_option("--iterations", o->iterations, "Timed runs (default 20)");
  sub->add_option("--warmup", o->warmup, "Untimed runs first (default 3)");
  sub->add_option("--export-profile", o->exportPath, "Write the timings as JSON (kiln-profile-1) for Kiln Studio");
  return {sub, [o] { runProfile(*o); }};
}

}  // namespace kiln::cli
