// kiln build MODEL --save PLAN [precision flags] [shape profiles] [--opt-level N] ...: builds an
// optimised engine and saves it as a plan (trtexec's conventions in Kiln's spelling). With
// --tensor-parallel N it builds one plan a rank (rank_plans.h names them) and writes all or none.
#include "commands.h"
#include "build_progress.h"
#include "console.h"
#include "precision_options.h"
#include "rank_plans.h"
#include "shape_specs.h"

#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace kiln::cli {
namespace {

struct BuildOptions {
  std::string modelPath, planPath, reportPath, timingCache, workspace = "1G";
  std::string tacticSources, tacticLock;
  PrecisionOptions precision;
  bool noTf32 = false, stronglyTyped = false;
  bool strictDevice = false, verbose = false;
  bool int4Weights = false;
  int64_t int4GroupSize = 128;
  bool int4GroupSizeGiven = false;
  int tensorParallel = 1;
  std::vector<std::string> minShapes, optShapes, maxShapes, profiles;
};

uint64_t parseSize(const std::string& text) {
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  double scale = unit.empty() || unit == "B" ? 1 : unit == "K" || unit == "KiB" ? 1024.0
                 : unit == "M" || unit == "MiB" ? 1024.0 * 1024
                 : unit == "G" || unit == "GiB" ? 1024.0 * 1024 * 1024 : -1;
  if (pos == 0 || scale < 0 || value < 0)
    throw Error(ErrorCode::kInvalidArgument, "--workspace '" + text + "' is not a size; write e.g. 512M or 2G");
  return uint64_t(value * scale);
}

// One profile per group: the i-th --min/--opt/--max-shapes, or one --profile MIN/OPT/MAX list.
std::vector<OptimizationProfile> parseProfiles(const BuildOptions& o) {
  std::vector<OptimizationProfile> profiles;
  size_t groups = std::max({o.minShapes.size(), o.optShapes.size(), o.maxShapes.size()});
  for (size_t g = 0; g < groups; ++g) {
    auto pick = [&](const std::vector<std::string>& v, const char* option) {
      return g < v.size() ? parseShapeList({v[g]}, option) : ShapeMap{};
    };
    ShapeMap mins = pick(o.minShapes, "--min-shapes"), opts = pick(o.optShapes, "--opt-shapes"),
             maxs = pick(o.maxShapes, "--max-shapes");
    OptimizationProfile p;
    std::set<std::string> names;
    for (auto* m : {&mins, &opts, &maxs})
      for (const auto& [name, dims] : *m) names.insert(name);
    for (const auto& name : names) {
      // trtexec fills a missing point from the others: opt defaults to max, min to opt.
      auto get = [&](const ShapeMap& m, const ShapeMap& fallback1, const ShapeMap& fallback2) {
        if (auto it = m.find(name); it != m.end()) return it->second;
        if (auto it = fallback1.find(name); it != fallback1.end()) return it->second;
        return fallback2.at(name);
      };
      p.inputs[name] = {get(mins, opts, maxs), get(opts, maxs, mins), get(maxs, opts, mins)};
    }
    profiles.push_back(std::move(p));
  }
  for (const auto& spec : o.profiles) {
    OptimizationProfile p;
    std::stringstream items(spec);
    std::string item;
    while (std::getline(items, item, ',')) {
      size_t colon = item.rfind(':');
      std::string name = colon == std::string::npos ? "" : item.substr(0, colon);
      std::string points = colon == std::string::npos ? "" : item.substr(colon + 1);
      size_t a = points.find('/'), b = points.rfind('/');
      if (name.empty() || a == std::string::npos || a == b)
        throw Error(ErrorCode::kInvalidArgument,
                    "--profile '" + item + "' must look like NAME:MINxDIMS/OPTxDIMS/MAXxDIMS, e.g. x:1x3x224x224/8x3x224x224/32x3x224x224");
      p.inputs[name] = {parseDims(points.substr(0, a), item, "--profile"),
                        parseDims(points.substr(a + 1, b - a - 1), item, "--profile"),
                        parseDims(points.substr(b + 1), item, "--profile")};
    }
    profiles.push_back(std::move(p));
  }
  return profiles;
}

// trtexec's manners: with no profile given, every dynamic dim is built as 1, with a warning that
// says how to ask for a range.
std::optional<OptimizationProfile> defaultProfile(const Network& network, Logger& logger) {
  OptimizationProfile profile;
  for (const auto& name : network.runtimeInputs()) {
    const Shape& shape = network.tensor(name).shape;
    if (!shape.hasRank() || shape.isFullyKnown()) continue;
    std::vector<int64_t> dims;
    for (const Dim& d : shape.dims()) dims.push_back(d.isKnown() ? d.value() : 1);
    logger.log(Severity::kWarning, "input '" + name + "' has dynamic shape " + shape.toString() +
                                       " and no profile was given; building for " + dimsToString(dims) +
                                       " (give --min-shapes/--opt-shapes/--max-shapes " + name + ":... for a range)");
    profile.inputs[name] = {dims, dims, dims};
  }
  if (profile.inputs.empty()) return std::nullopt;
  return profile;
}

// "-cudnn,+cublaslt": the sources switched off (trtexec's --tacticSources, lower case).
std::vector<std::string> parseTacticSources(const std::string& text) {
  static const std::set<std::string> known = {"cudnn", "cublaslt", "cuda", "nvrtc", "cpu"};
  std::vector<std::string> off;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    const std::string name = item.size() > 1 ? item.substr(1) : "";
    if ((item.empty() || (item[0] != '-' && item[0] != '+')) || !known.count(name))
      throw Error(ErrorCode::kInvalidArgument,
                  "--tactic-sources '" + text +
                      "': each item is +SOURCE or -SOURCE, "
                      "SOURCE one of cudnn, cublaslt, cuda, nvrtc, cpu (e.g. -cudnn,+cublaslt)");
    std::erase(off, name);
    if (item[0] == '-') off.push_back(name);
  }
  return off;
}

// --verbose: each layer that had a choice, its candidates in the backend's order with their times
// and statuses, the chosen one marked.
void printTacticCandidates(const BuildReport& report) {
  std::cout << "  tactics (* chosen; ms: median at the opt shapes):\n";
  for (const LayerSummary& l : report.layers) {
    if (l.tacticCandidates.size() < 2) continue;
    std::cout << "    " << l.name << " (" << l.type << ", " << l.precision << ")\n";
    for (const TacticCandidate& c : l.tacticCandidates) {
      std::ostringstream time;
      if (c.milliseconds >= 0) time << std::fixed << std::setprecision(4) << c.milliseconds << " ms";
      std::cout << "      " << (c.tactic == l.tactic ? "* " : "  ") << std::left << std::setw(34) << c.tactic
                << std::setw(13) << (c.milliseconds >= 0 ? time.str() : "-") << c.status << std::right << "\n";
    }
  }
}

// Writes every file or none: a failure part-way removes the ones already written.
void writeAll(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& files) {
  for (size_t i = 0; i < files.size(); ++i) {
    try {
      writeFileAtomically(files[i].first, files[i].second);
    } catch (const Error&) {
      std::error_code ec;
      for (size_t j = 0; j < i; ++j) std::filesystem::remove(files[j].first, ec);
      throw;
    }
  }
}

void printSummary(const BuildOptions& o, const BuilderConfig& config, const BuildReport& r);

void runBuild(const BuildOptions& o) {
  BuilderConfig config;
  applyPrecisionOptions(o.precision, config);
  config.strictDevice = o.strictDevice;
  config.allowTF32 = !o.noTf32;
  config.strongTyping = o.stronglyTyped;
  if (o.int4GroupSizeGiven && !o.int4Weights)
    throw Error(ErrorCode::kInvalidArgument, "--int4-group-size needs --int4-weights");
  config.int4Weights = o.int4Weights;
  config.int4GroupSize = o.int4GroupSize;
  config.workspaceBytes = parseSize(o.workspace);
  config.timingCachePath = o.timingCache;
  config.disabledTacticSources = parseTacticSources(o.tacticSources);
  config.tacticLockPath = o.tacticLock;
  config.profiles = parseProfiles(o);
  const int ranks = o.tensorParallel;
  if (ranks < 1)
    throw Error(ErrorCode::kInvalidArgument, "--tensor-parallel must be 1 or more, got " + std::to_string(ranks));
  auto network = OnnxImporter().importFile(o.modelPath);
  StderrLogger logger;
  if (config.profiles.empty())
    if (auto profile = defaultProfile(*network, logger)) config.profiles.push_back(std::move(*profile));
  // Rank r's files: the plan, the report and the tactic lock (each rank's layers differ) get a suffix.
  auto fileOf = [&](const std::string& path, int rank) {
    return ranks > 1 && !path.empty() ? rankPath(path, rank) : path;
  };
  std::vector<BuildResult> results;
  {
    InterruptHandler interrupts;
    BuildProgressPrinter progress;
    for (int rank = 0; rank < ranks; ++rank) {
      config.tensorParallelSize = ranks;
      config.tensorParallelRank = rank;
      config.tacticLockPath = fileOf(o.tacticLock, rank);
      try {
        results.push_back(Builder(logger).build(*network, config, &progress));
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kCancelled) throw;
        const BuildProgress& at = progress.last();
        throw Error(ErrorCode::kCancelled, "build interrupted during " + at.phase +
                                               (at.layer.empty() ? "" : " at layer '" + at.layer + "'") +
                                               "; nothing was written (no plan, timing cache or tactic lock)");
      }
    }
  }
  std::vector<std::pair<std::string, std::vector<uint8_t>>> files;
  for (int rank = 0; rank < ranks; ++rank) {
    files.emplace_back(fileOf(o.planPath, rank), std::move(results[size_t(rank)].plan));
    if (o.reportPath.empty()) continue;
    const std::string json = results[size_t(rank)].report.toJson();
    files.emplace_back(fileOf(o.reportPath, rank), std::vector<uint8_t>(json.begin(), json.end()));
  }
  writeAll(files);
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string plan = fileOf(o.planPath, rank);
    const auto written = std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.first == plan; });
    std::cout << "built " << plan << " (" << written->second.size() << " bytes) in " << std::fixed
              << std::setprecision(0) << results[size_t(rank)].report.buildMilliseconds << " ms"
              << (ranks > 1 ? " (tensor-parallel rank " + std::to_string(rank) + " of " + std::to_string(ranks) + ")"
                            : std::string())
              << "\n";
  }
  printSummary(o, config, results[0].report);  // rank 0's: the ranks differ only in their shares
}

void printSummary(const BuildOptions& o, const BuilderConfig& config, const BuildReport& r) {
  std::cout << "  " << r.onnxNodeCount << " ONNX nodes -> " << r.layers.size() << " engine layers on " << r.backend
            << "\n";
  for (const auto& pass : r.passes) {
    if (pass.changes.empty()) continue;
    std::cout << "  pass " << std::left << std::setw(22) << pass.name << pass.layersBefore << " -> " << pass.layersAfter
              << " layers (" << pass.changes.size() << " changes)\n";
    if (pass.name == "TensorParallelSplit")  // which blocks were split is the point of the build
      for (const auto& change : pass.changes) std::cout << "    " << change << "\n";
  }
  if (!config.layerPrecisions.empty())
    std::cout << "  " << config.layerPrecisions.size() << " layer precision constraint(s) held\n";
  std::cout << "  activations: " << r.peakActivationBytes << " bytes peak (" << r.naiveActivationBytes
            << " without sharing), weights: " << r.weightBytes << " bytes\n";
  std::map<std::string, int> inserted, fallbacks;
  std::map<std::string, int> quantizedLayers;  // by precision
  int keptFloat = 0, int4Layers = 0, int4KeptFloat = 0;
  for (const auto& l : r.layers) {
    if (l.role != "compute") ++inserted[l.role];
    if (!l.fallback.empty()) ++fallbacks[l.backend];
    if (l.precision == "int8" || l.precision == "fp8" || l.precision == "fp4") ++quantizedLayers[l.precision];
    int4Layers += l.type == "kiln.WeightOnlyMatMul";
    keptFloat += !l.precisionReason.empty();
    int4KeptFloat += l.precisionReason.find("not int4") != std::string::npos;
  }
  if (!r.calibration.calibrator.empty())
    std::cout << "  calibration: " << r.calibration.calibrator << ", " << r.calibration.scales.size()
              << " activation scales "
              << (r.calibration.source == "cache" ? "from the cache " + r.calibration.cachePath
                                                  : "from " + std::to_string(r.calibration.batches) + " batch(es)" +
                                                        (r.calibration.cachePath.empty()
                                                             ? std::string()
                                                             : ", cache written to " + r.calibration.cachePath))
              << "\n";
  std::string quantized;  // "int8: 10 layer(s)", for each quantized precision asked
  for (const auto& [asked, name] : {std::pair{o.precision.int8, "int8"}, std::pair{o.precision.fp8, "fp8"},
                                    std::pair{o.precision.fp4, "fp4"}})
    if (asked) quantized += (quantized.empty() ? "" : ", ") + std::string(name) + ": " +
                            std::to_string(quantizedLayers[name]) + " layer(s)";
  if (!quantized.empty())
    std::cout << "  " << quantized << "; " << keptFloat
              << " Conv/MatMul/Gemm layer(s) stay float (kiln inspect shows why)\n";
  if (o.int4Weights || int4Layers > 0)
    std::cout << "  int4 weights: " << int4Layers << " layer(s)"
              << (o.int4Weights ? " (groups of " + std::to_string(o.int4GroupSize) + ")" : std::string()) << "; "
              << int4KeptFloat << " MatMul/Gemm layer(s) keep float weights (kiln inspect shows why)\n";
  if (!r.qdq.empty()) {
    const QdqTally t = tallyQdq(r.qdq);
    std::cout << "  explicit quantization: " << r.qdq.size() << " Q/DQ nodes, " << t.fused << " fused into "
              << t.int8Layers << " int8 layer(s), " << t.removed << " dropped, " << t.unfused
              << " stay float (kiln inspect shows why)\n";
  }
  for (const auto& [role, count] : inserted) std::cout << "  inserted " << count << " " << role << " layer(s)\n";
  for (const auto& [backend, count] : fallbacks)
    std::cout << "  " << count << " layer(s) fell back to the " << backend << " backend (kiln inspect shows why)\n";
  if (o.verbose) printTacticCandidates(r);
}

}  // namespace

Command addBuildCommand(CLI::App& app) {
  auto o = std::make_shared<BuildOptions>();
  CLI::App* sub = app.add_subcommand("build", "Build an optimised engine from an ONNX model and save it as a plan");
  sub->add_option("MODEL", o->modelPath, "ONNX model file (.onnx)")->required();
  sub->add_option("--save", o->planPath, "Where to write the plan (written atomically)")->required();
  addPrecisionOptions(sub, o->precision);
  sub->add_flag("--no-tf32", o->noTf32, "Disallow TF32 for fp32 matrix work (CUDA)");
  sub->add_flag("--strongly-typed", o->stronglyTyped, "Keep the model's own types (no precision search)");
  sub->add_flag("--int4-weights", o->int4Weights,
                "Quantize the constant weights of MatMul/Gemm layers to int4 (weight-only: activations stay float; "
                "small weights stay float)");
  sub->add_option_function<int64_t>(
         "--int4-group-size",
         [o](const int64_t& size) {
           o->int4GroupSize = size;
           o->int4GroupSizeGiven = true;
         },
         "Values along K that share one int4 scale: 32, 64 or 128 (default 128)");
  sub->add_option("--min-shapes", o->minShapes, "NAME:DIMS,...: smallest shapes of an optimisation profile (repeat for more profiles)")
      ->allow_extra_args(false);
  sub->add_option("--opt-shapes", o->optShapes, "NAME:DIMS,...: the shapes to tune for")->allow_extra_args(false);
  sub->add_option("--max-shapes", o->maxShapes, "NAME:DIMS,...: largest shapes of the profile")->allow_extra_args(false);
  sub->add_option("--profile", o->profiles, "NAME:MIN/OPT/MAX,...: one whole profile, e.g. x:1x3x224x224/8x3x224x224/32x3x224x224")
      ->allow_extra_args(false);
  sub->add_option("--workspace", o->workspace, "Scratch memory limit for tactics, e.g. 512M, 2G (default 1G)");
  sub->add_option("--timing-cache", o->timingCache, "Timing cache file, read and updated");
  sub->add_option("--tactic-sources", o->tacticSources,
                  "Switch tactic sources off or on: -cudnn,+cublaslt (sources: cudnn, cublaslt, cuda, nvrtc, cpu)");
  sub->add_option("--tactic-lock", o->tacticLock,
                  "Tactic lock file: replayed where it exists (no timing), else written with this build's choices");
  sub->add_flag("--strict-device", o->strictDevice,
                "Fail the build when a layer cannot run on the backend, instead of falling back to the CPU");
  sub->add_option("--export-report", o->reportPath,
                  "Write the build report (passes, layers with every tactic candidate's time, memory) as JSON");
  sub->add_flag("--verbose", o->verbose, "Print every layer's tactic candidates, their times and the choice");
  sub->add_option("--tensor-parallel", o->tensorParallel,
                  "Split the transformer blocks (attention heads, MLP width) over N ranks and write one plan a rank: "
                  "PLAN with .rank0 ... .rank<N-1> before its extension (run them with --ranks N)");
  return {sub, [o] { runBuild(*o); }};
}

}  // namespace kiln::cli
