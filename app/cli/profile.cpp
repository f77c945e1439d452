// kiln profile PLAN: how fast an engine runs, as trtexec reports it: throughput and latency
// percentiles over a timed period (copies in, compute and copies out timed apart with the
// backend's events; several streams at once with --streams), then per-layer times from a separate
// profiled pass, slowest first; --export-profile saves it all for Kiln Studio. With --ranks N, the N
// plans of a tensor-parallel build run in lock step, one thread a rank: the latency of a step (all
// ranks) and of each rank.
#include "artifact.h"
#include "commands.h"
#include "run_inputs.h"

#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/multi_rank.h>
#include <kiln/performance.h>

#include <algorithm>
#include <iomanip>
#include <iostream>

namespace kiln::cli {
namespace {

struct ProfileOptions {
  std::string planPath, exportPath;
  InputRequest inputs;
  PerformanceOptions performance;
  bool noDataTransfers = false;
  int ranks = 1;
};

void printStats(const char* what, const LatencyStats& s) {
  std::cout << std::left << std::setw(18) << what << std::right << std::fixed << std::setprecision(4)
            << "min " << s.min << ", max " << s.max << ", mean " << s.mean << ", median " << s.median << ", p90 "
            << s.p90 << ", p95 " << s.p95 << ", p99 " << s.p99 << " ms\n";
}

void profileRanks(const ProfileOptions& o, const Artifact& plan, const std::map<std::string, HostTensor>& inputs) {
  if (!o.exportPath.empty())
    throw Error(ErrorCode::kInvalidArgument, "--export-profile does not take --ranks yet; leave one of them out");
  const RankPerformanceReport report = measureRankPerformance(plan.ranks, inputs, o.performance);
  std::cout << "engine: " << report.plan.backend << " (" << report.plan.deviceName << "), " << report.ranks
            << " tensor-parallel ranks, inputs " << report.inputShapes << "\n"
            << "timed " << report.steps << " steps (each runs every rank once) in " << std::fixed
            << std::setprecision(3) << report.wallSeconds << " s\n"
            << "throughput: " << std::setprecision(1) << report.throughput << " runs/s\n";
  printStats("latency:", report.latency);
  for (size_t r = 0; r < report.perRank.size(); ++r)
    printStats(("rank " + std::to_string(r) + ":").c_str(), report.perRank[r]);
  std::cout << "(latency: a step from the first rank's start to the last rank's end; per-layer times are not "
               "measured with --ranks)\n";
}

void runProfile(ProfileOptions o) {
  Artifact plan = loadArtifact(o.planPath, o.ranks);
  if (!plan.isPlan())
    throw Error(ErrorCode::kInvalidArgument, "'" + o.planPath + "' is not a plan; build one first with `kiln build MODEL --save PLAN`");
  std::map<std::string, Value> values;
  InputRequest request = o.inputs;
  request.defaultShapes = plan.defaultShapes;
  for (auto& input : prepareInputs(*plan.network, request)) values[input.name] = std::move(input.value);
  o.performance.dataTransfers = !o.noDataTransfers;
  if (o.ranks > 1) return profileRanks(o, plan, tensorInputs(values));
  const PerformanceReport report = measurePerformance(*plan.engine, tensorInputs(values), o.performance);
  std::cout << "engine: " << report.plan.backend << " (" << report.plan.deviceName << "), inputs " << report.inputShapes
            << "\n"
            << "timed " << report.runs << " runs on " << report.streams << " stream(s) in " << std::fixed
            << std::setprecision(3) << report.wallSeconds << " s"
            << (report.dataTransfers ? "" : " (no data transfers)") << (report.cudaGraph ? " as CUDA graphs" : "")
            << "\n"
            << "throughput: " << std::setprecision(1) << report.throughput << " runs/s\n";
  printStats("latency:", report.latency);
  if (report.dataTransfers) printStats("host to device:", report.hostToDevice);
  printStats(report.plan.backend == "cpu" ? "compute:" : "GPU compute:", report.compute);
  if (report.dataTransfers) printStats("device to host:", report.deviceToHost);

  auto layers = report.layers.layers;
  std::sort(layers.begin(), layers.end(), [](const auto& x, const auto& y) { return x.medianMs > y.medianMs; });
  if (!layers.empty()) {
    std::cout << "per layer (median of " << report.layers.iterations << " profiled runs; end to end "
              << std::setprecision(3) << report.layers.totalMedianMs << " ms):\n";
    std::cout << "  " << std::left << std::setw(36) << "layer" << std::setw(20) << "type" << std::setw(8) << "prec"
              << std::right << std::setw(10) << "median ms" << std::setw(8) << "%" << "  tactic\n";
    for (const auto& l : layers)
      std::cout << "  " << std::left << std::setw(36) << l.name.substr(0, 35) << std::setw(20) << l.type.substr(0, 19)
                << std::setw(8) << l.precision << std::right << std::setprecision(3) << std::setw(10) << l.medianMs
                << std::setprecision(1) << std::setw(8) << l.percent << "  " << l.tactic << "\n";
  }
  if (!o.exportPath.empty()) {
    std::string json = report.toJson();
    writeFileAtomically(o.exportPath, std::vector<uint8_t>(json.begin(), json.end()));
    std::cout << "profile written to " << o.exportPath << "\n";
  }
}

}  // namespace

Command addProfileCommand(CLI::App& app) {
  auto o = std::make_shared<ProfileOptions>();
  CLI::App* sub = app.add_subcommand("profile", "Measure a plan's throughput, latency and per-layer times");
  sub->add_option("PLAN", o->planPath, "Plan file made by `kiln build`")->required();
  sub->add_option("--input", o->inputs.inputFiles, "NAME=FILE (.npy or .pb), repeatable; others are random")
      ->allow_extra_args(false);
  sub->add_option("--shapes", o->inputs.shapes, "NAME:1x3x224x224,...: shapes of random inputs")->allow_extra_args(false);
  sub->add_option("--seed", o->inputs.seed, "Seed of the random inputs (default 0)");
  sub->add_option("--iterations", o->performance.iterations, "Timed runs per stream, at least (default 10)");
  sub->add_option("--duration", o->performance.durationSeconds, "Timed for at least this many seconds (default 3)");
  sub->add_option("--warmup", o->performance.warmupMs, "Untimed runs first for this many milliseconds (default 200)");
  sub->add_flag("--no-data-transfers", o->noDataTransfers, "Time compute only: no copies of inputs and outputs");
  sub->add_option("--streams", o->performance.streams, "Execution contexts running at once, each on its stream (default 1)");
  sub->add_flag("--cuda-graph", o->performance.cudaGraph, "Replay each context's launches as a CUDA graph");
  sub->add_option("--layer-runs", o->performance.layerProfileRuns, "Profiled runs for per-layer times (default 20, 0: none)");
  sub->add_option("--export-profile", o->exportPath, "Write the measurements as JSON (kiln-profile-1) for Kiln Studio");
  sub->add_option("--ranks", o->ranks,
                  "Time the N plans of `kiln build --tensor-parallel N --save PLAN` as N ranks (one thread each on "
                  "the CPU): per step and per rank");
  return {sub, [o] { runProfile(*o); }};
}

}  // namespace kiln::cli
