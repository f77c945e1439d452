// Kiln CPU vs ONNX Runtime CPU on the same models and inputs. A program that prints a table, never
// a test: scripts/run_cpu_benchmark.sh generates the models, installs onnxruntime-node and runs it.
//
//   kiln_cpu_benchmark --dir DIR [--ort-script tests/benchmarks/ort_bench.js] [--rounds N] [--runs N]
//                      [--warmup N] [--threads N] [--reference-runs N] [--profile TOP] [--int8] MODEL...
//
// For each MODEL it imports DIR/MODEL.onnx, builds a CPU engine (default BuilderConfig, dynamic
// dims fixed at the input's as its one profile) and, in each of --rounds rounds, runs
// ort_bench.js (when --ort-script is given) and then times ExecutionContext::run (N runs after
// warm-up). Reported: the median of the round medians and the minimum of all runs. It also times
// the unoptimised ReferenceExecutor and compares Kiln's outputs with ONNX Runtime's: max rel diff =
// max |kiln - ort| / max |ort|. With --int8 each model has two more rows: Kiln's INT8 engine
// (calibrated minmax on the benchmark input itself, `kiln build --int8`) and the same with each layer
// quantized only where it times faster (`--quantize-where-faster`), timed the same way against the
// same ONNX Runtime fp32 timings; their max rel diff is then what quantization cost.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/host_memory.h>
#include <kiln/npy.h>
#include <kiln/onnx_importer.h>
#include <kiln/profile_report.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/common/onednn.h>

#include <cblas.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string dir;
  std::string ortScript;  // tests/benchmarks/ort_bench.js: run by `node` between Kiln's rounds
  int runs = 30, warmup = 5, threads = 2, referenceRuns = 5, rounds = 3;
  int profileTop = 0;  // > 0: print the slowest layers and the time per op type
  bool int8 = false;   // also an INT8 row per model
  std::vector<std::string> models;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "kiln_cpu_benchmark: %s\nusage: kiln_cpu_benchmark --dir DIR [--ort-script ort_bench.js] [--rounds N] "
               "[--runs N] [--warmup N] [--threads N] [--reference-runs N] [--profile TOP] [--int8] MODEL...\n",
               why.c_str());
  std::exit(2);
}

Options parseOptions(int argc, char** argv) {
  Options o;
  const std::map<std::string, int*> counts = {{"--runs", &o.runs},       {"--warmup", &o.warmup},
                                              {"--threads", &o.threads}, {"--reference-runs", &o.referenceRuns},
                                              {"--profile", &o.profileTop},  {"--rounds", &o.rounds}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--dir" && i + 1 < argc) {
      o.dir = argv[++i];
    } else if (arg == "--ort-script" && i + 1 < argc) {
      o.ortScript = argv[++i];
    } else if (arg == "--int8") {
      o.int8 = true;
    } else if (auto it = counts.find(arg); it != counts.end() && i + 1 < argc) {
      *it->second = std::atoi(argv[++i]);
      if (*it->second < 0) usage(arg + " must not be negative");
    } else if (arg.rfind("--", 0) == 0) {
      usage("unknown option " + arg);
    } else {
      o.models.push_back(arg);
    }
  }
  if (o.dir.empty() || o.models.empty()) usage("give --dir and at least one model");
  if (o.runs < 1 || o.threads < 1 || o.rounds < 1) usage("--runs, --rounds and --threads must be at least 1");
  return o;
}

nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw kiln::Error(kiln::ErrorCode::kInvalidArgument, "cannot open " + path);
  return nlohmann::json::parse(in);
}

kiln::HostTensor readFloat32(const std::string& path, const std::vector<int64_t>& dims) {
  kiln::HostTensor t(kiln::DataType::kFloat32, dims);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw kiln::Error(kiln::ErrorCode::kInvalidArgument, "cannot read " + path);
  if (bytes.size() != t.byteSize())
    throw kiln::Error(kiln::ErrorCode::kInvalidArgument, path + " holds " + std::to_string(bytes.size()) +
                                                             " bytes, expected " + std::to_string(t.byteSize()));
  std::copy(bytes.begin(), bytes.end(), static_cast<char*>(t.rawData()));
  return t;
}

// The tensors listed in `listing` ([{name, dims, file}]), files relative to `dir`.
std::map<std::string, kiln::HostTensor> readTensors(const std::string& dir, const nlohmann::json& listing) {
  std::map<std::string, kiln::HostTensor> tensors;
  for (const auto& entry : listing)
    tensors[entry.at("name").get<std::string>()] =
        readFloat32(dir + "/" + entry.at("file").get<std::string>(), entry.at("dims").get<std::vector<int64_t>>());
  return tensors;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

struct Timing {
  double medianMs = NAN, minMs = NAN;
};

// The median of per-round medians and the minimum over all rounds.
Timing combineRounds(const std::vector<Timing>& rounds) {
  std::vector<double> medians;
  double minimum = INFINITY;
  for (const Timing& t : rounds) {
    medians.push_back(t.medianMs);
    minimum = std::min(minimum, t.minMs);
  }
  return rounds.empty() ? Timing{} : Timing{median(medians), minimum};
}

// Wall time of `runs` calls of `fn` after `warmup` untimed ones.
Timing timeRuns(int warmup, int runs, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return {median(times), *std::min_element(times.begin(), times.end())};
}

std::string shellQuoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// One ONNX Runtime round: ort_bench.js times the model and leaves MODEL.ort.json next to it.
void runOrtRound(const Options& o, const std::string& model) {
  std::string command = "node " + shellQuoted(o.ortScript) + " " + shellQuoted(o.dir) + " " + shellQuoted(model) +
                        " --runs " + std::to_string(o.runs) + " --warmup " + std::to_string(o.warmup) + " --threads " +
                        std::to_string(o.threads) + " > /dev/null";
  if (std::system(command.c_str()) != 0)
    throw kiln::Error(kiln::ErrorCode::kRuntimeError, "ONNX Runtime round failed: " + command);
}

// max |a - b| / max |b| over all outputs; NaN when shapes differ or a value is not finite.
double maxRelativeDiff(const std::map<std::string, kiln::HostTensor>& kiln,
                       const std::map<std::string, kiln::HostTensor>& reference) {
  double maxDiff = 0, maxRef = 0;
  for (const auto& [name, expected] : reference) {
    auto it = kiln.find(name);
    if (it == kiln.end() || it->second.dims() != expected.dims() || it->second.dtype() != kiln::DataType::kFloat32)
      return NAN;
    const float *a = it->second.data<float>(), *b = expected.data<float>();
    for (int64_t i = 0; i < expected.elementCount(); ++i) {
      if (!std::isfinite(a[i])) return NAN;
      maxDiff = std::max(maxDiff, double(std::fabs(a[i] - b[i])));
      maxRef = std::max(maxRef, double(std::fabs(b[i])));
    }
  }
  return maxRef > 0 ? maxDiff / maxRef : maxDiff;
}

std::map<std::string, kiln::HostTensor> asTensors(const kiln::ValueMap& values) {
  std::map<std::string, kiln::HostTensor> tensors;
  for (const auto& [name, value] : values)
    if (!value.isSequence() && value.hasElement) tensors[name] = value.tensor;
  return tensors;
}

struct Row {
  std::string model;
  Timing kiln, reference, ort;
  double diffVsOrt = NAN, diffVsReference = NAN;
  std::string ortVersion;
};

void printProfile(const kiln::Engine& engine, const std::map<std::string, kiln::HostTensor>& inputs, int runs,
                  int top) {
  kiln::ProfileReport report = kiln::profileEngine(engine, inputs, runs, 2);
  std::map<std::string, std::pair<double, int>> byType;
  for (const auto& layer : report.layers) {
    auto& [ms, count] = byType[layer.type];
    ms += layer.medianMs;
    ++count;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> types(byType.begin(), byType.end());
  std::sort(types.begin(), types.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  double sum = 0;
  for (const auto& layer : report.layers) sum += layer.medianMs;
  std::printf("  %zu layers, end-to-end median %.2f ms, sum of layer medians %.2f ms\n  by op type:\n",
              report.layers.size(), report.totalMedianMs, sum);
  for (const auto& [type, stats] : types)
    std::printf("    %-24s %4d layers %9.3f ms %5.1f%%\n", type.c_str(), stats.second, stats.first,
                100 * stats.first / std::max(sum, 1e-9));
  auto layers = report.layers;
  std::sort(layers.begin(), layers.end(), [](const auto& a, const auto& b) { return a.medianMs > b.medianMs; });
  std::printf("  slowest layers:\n");
  for (size_t i = 0; i < layers.size() && i < size_t(top); ++i)
    std::printf("    %-40s %-20s %8.3f ms  %s\n", layers[i].name.c_str(), layers[i].type.c_str(), layers[i].medianMs,
                layers[i].tactic.c_str());
}

// A profile fixing every dynamic input dim at the benchmark input's (the trained models have a
// dynamic batch); none when the model's inputs are all static.
std::optional<kiln::OptimizationProfile> profileFor(const kiln::Network& network,
                                                    const std::map<std::string, kiln::HostTensor>& inputs) {
  kiln::OptimizationProfile profile;
  for (const auto& name : network.runtimeInputs()) {
    const kiln::Shape& shape = network.tensor(name).shape;
    auto it = inputs.find(name);
    if (shape.isFullyKnown() || it == inputs.end()) continue;
    profile.inputs[name] = {it->second.dims(), it->second.dims(), it->second.dims()};
  }
  if (profile.inputs.empty()) return std::nullopt;
  return profile;
}

// The benchmark inputs as .npy files named by input: an INT8 build's calibration data.
std::string writeCalibration(const Options& o, const std::string& model,
                             const std::map<std::string, kiln::HostTensor>& inputs) {
  const std::string dir = o.dir + "/" + model + ".calibration";
  std::filesystem::create_directories(dir);
  for (const auto& [name, tensor] : inputs) kiln::writeNpyFile(tensor, dir + "/" + name + ".npy");
  return dir;
}

// The engines of a model's rows: fp32, INT8 (every layer it can), INT8 where faster (each layer
// quantized only where it times faster, --quantize-where-faster).
enum class Variant { kFp32, kInt8, kInt8WhereFaster };

// int8 rows: Kiln's INT8 engines against the ONNX Runtime fp32 timings of the model's fp32 row.
Row benchmarkModel(const Options& o, const std::string& model, Variant variant) {
  const bool int8 = variant != Variant::kFp32;
  Row row;
  row.model = model + (variant == Variant::kInt8              ? " int8"
                       : variant == Variant::kInt8WhereFaster ? " int8 where faster"
                                                              : "");
  const std::string base = o.dir + "/" + model;
  auto inputs = readTensors(o.dir, readJson(base + ".inputs.json").at("inputs"));
  auto network = kiln::OnnxImporter().importFile(base + ".onnx");

  kiln::BuilderConfig config;
  if (auto profile = profileFor(*network, inputs)) config.profiles.push_back(*profile);
  if (int8) {
    config.allowINT8 = true;
    config.calibration.dataPath = writeCalibration(o, model, inputs);
    config.calibration.calibrator = kiln::CalibratorKind::kMinMax;
    config.quantizeWhereFaster = variant == Variant::kInt8WhereFaster;
  }
  kiln::BuildResult built = kiln::Builder().build(*network, config);
  std::shared_ptr<kiln::Engine> engine = kiln::Runtime().load(built.plan);
  auto context = engine->createExecutionContext();
  std::map<std::string, kiln::HostTensor> kilnOutputs;
  // Rounds alternate between the two runtimes so that both see the same changes in machine load.
  std::vector<Timing> kilnRounds, ortRounds;
  for (int round = 0; round < o.rounds; ++round) {
    if (!o.ortScript.empty() && !int8) {
      runOrtRound(o, model);
      nlohmann::json ort = readJson(base + ".ort.json");
      ortRounds.push_back({ort.at("median_ms").get<double>(), ort.at("min_ms").get<double>()});
    }
    kilnRounds.push_back(timeRuns(o.warmup, o.runs, [&] { kilnOutputs = context->run(inputs); }));
  }
  row.kiln = combineRounds(kilnRounds);

  kiln::ReferenceExecutor reference(network);
  kiln::ValueMap referenceInputs(inputs.begin(), inputs.end());
  kiln::ValueMap referenceOutputs;
  if (o.referenceRuns > 0) {
    row.reference = timeRuns(1, o.referenceRuns, [&] { referenceOutputs = reference.run(referenceInputs); });
    row.diffVsReference = maxRelativeDiff(kilnOutputs, asTensors(referenceOutputs));
  }

  if (std::ifstream(base + ".ort.json")) {  // from this run's rounds, or left by an earlier ort_bench.js
    nlohmann::json ort = readJson(base + ".ort.json");
    row.ort = ortRounds.empty() ? Timing{ort.at("median_ms").get<double>(), ort.at("min_ms").get<double>()}
                                : combineRounds(ortRounds);
    row.ortVersion = ort.value("ort_version", "");
    row.diffVsOrt = maxRelativeDiff(kilnOutputs, readTensors(o.dir, ort.at("outputs")));
  }
  if (o.profileTop > 0) {
    std::printf("%s:\n", model.c_str());
    printProfile(*engine, inputs, o.runs, o.profileTop);
  }
  return row;
}

// Medians lead (the target is on them); the minimums show each runtime's best case on a busy machine.
void printTable(const std::vector<Row>& rows) {
  std::printf("\n| model | Kiln ms | ORT ms | Kiln / ORT | max rel diff vs ORT | Kiln min ms | ORT min ms "
              "| Kiln reference ms | max rel diff vs reference |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows)
    std::printf("| %s | %.2f | %.2f | %.2fx | %.2e | %.2f | %.2f | %.1f | %.2e |\n", r.model.c_str(), r.kiln.medianMs,
                r.ort.medianMs, r.kiln.medianMs / r.ort.medianMs, r.diffVsOrt, r.kiln.minMs, r.ort.minMs,
                r.reference.medianMs, r.diffVsReference);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parseOptions(argc, argv);
  kiln::keepFreedHostMemory();  // as the kiln CLI and Kiln Studio do
  kiln::kernels::setCpuThreadCount(o.threads);
  openblas_set_num_threads(o.threads);
  std::printf("Kiln %s, %d threads, %s, OpenBLAS core %s (%s)\n%d rounds of %d timed runs after %d warm-up, "
              "median of the round medians\n", KILN_VERSION, o.threads, kiln::kernels::oneDnnDescription().c_str(), openblas_get_corename(), openblas_get_config(),
              o.rounds, o.runs, o.warmup);
  std::vector<Row> rows;
  try {
    for (const auto& model : o.models) {
      rows.push_back(benchmarkModel(o, model, Variant::kFp32));
      if (!o.int8) continue;
      rows.push_back(benchmarkModel(o, model, Variant::kInt8));
      rows.push_back(benchmarkModel(o, model, Variant::kInt8WhereFaster));
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln_cpu_benchmark: %s\n", e.what());
    return 1;
  }
  printTable(rows);
  if (!rows.empty() && !rows.front().ortVersion.empty())
    std::printf("ONNX Runtime %s (onnxruntime-node, CPU execution provider)\n", rows.front().ortVersion.c_str());
  return 0;
}
