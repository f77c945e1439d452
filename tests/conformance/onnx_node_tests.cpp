// Runs ONNX's backend node tests (Debian package libonnx-testdata) on Kiln's CPU backend: on the
// reference executor, or (--engine) through the whole engine flow (passes, tactic timing, plan
// file, runtime), which puts the fused kernels, the oneDNN tactics and channels-last activations
// through the same data. Each test runs in a child process, so a crash or hang fails that test
// alone. Prints one line per failing test and ends with "N passed, M failed, K skipped".
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include <kiln/compare.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace kiln;

namespace {

struct Options {
  std::string nodeDir;
  std::string excludedFile;
  std::string filter;
  double minPassRate = 0.95;
  int timeoutSeconds = 60;
  int batchSize = 1;  // tests per child process (a GPU context is made once per child)
  int jobs = 1;       // child processes at once
  bool verbose = false;
  bool engine = false;  // build and run an engine instead of the reference executor
  BackendKind backend = BackendKind::kCpu;  // the engine's backend
  bool strictDevice = false;                // every layer on that backend, or the test is skipped
};

// A verdict that counts the test as skipped rather than failed.
constexpr const char* kSkipPrefix = "SKIP: ";

// Loads "name  reason" lines; '#' starts a comment.
std::map<std::string, std::string> loadExcluded(const std::string& path) {
  std::map<std::string, std::string> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) {
    std::cerr << "cannot read the excluded-test list '" << path << "'\n";
    std::exit(2);
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.find_first_of(" \t");
    std::string name = line.substr(0, space);
    std::string reason = space == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", space));
    out[name] = reason;
  }
  return out;
}

// ONNX 1.12's test data stores bfloat16 tensors as UINT16 bit patterns; read them as what the model
// declares.
Value asDeclared(Value v, DataType declared) {
  if (!v.isSequence() && v.hasElement && declared == DataType::kBFloat16 && v.tensor.dtype() == DataType::kUInt16)
    v.tensor = v.tensor.viewAs(DataType::kBFloat16, v.tensor.dims());
  return v;
}

// An engine for `network` built for the shapes of `feeds` (a profile pins inputs whose dims the
// model leaves open), run on them.
ValueMap runOnEngine(const std::shared_ptr<Network>& network, const ValueMap& feeds, const Options& options) {
  BuilderConfig config;
  config.backend = options.backend;
  config.strictDevice = options.strictDevice;
  // The expected outputs are exact fp32 (numpy): TF32's 10-bit products miss the tests' 1e-3
  // relative bound on deep convolutions (Conv3d_dilated on the H200).
  config.allowTF32 = false;
  OptimizationProfile profile;
  std::map<std::string, HostTensor> inputs;
  for (const auto& [name, value] : feeds) {
    inputs[name] = value.tensor;
    if (!network->tensor(name).shape.isFullyKnown())
      profile.inputs[name] = {value.tensor.dims(), value.tensor.dims(), value.tensor.dims()};
  }
  if (!profile.inputs.empty()) config.profiles.push_back(profile);
  auto engine = Runtime().load(Builder().build(*network, config).plan);
  ValueMap results;
  for (auto& [name, tensor] : engine->createExecutionContext()->run(inputs)) results[name] = Value(tensor);
  return results;
}

// Why the engine cannot take this test (it runs on tensors only), or "".
std::string engineCannotRun(const Network& network) {
  for (const auto& name : network.runtimeInputs())
    if (network.tensor(name).kind != ValueKind::kTensor) return "input '" + name + "' is not a tensor";
  for (const auto& name : network.outputs())
    if (network.tensor(name).kind != ValueKind::kTensor) return "output '" + name + "' is not a tensor";
  return "";
}

// Runs one test directory; returns "" on success or the reason it failed.
std::string runTest(const fs::path& dir, bool onEngine, const Options& options) {
  auto network = OnnxImporter().importFile((dir / "model.onnx").string());
  if (onEngine)
    if (std::string why = engineCannotRun(*network); !why.empty()) return kSkipPrefix + why;
  ReferenceExecutor executor(network);
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_* folders";
  auto inputs = network->runtimeInputs();
  for (const auto& set : sets) {
    ValueMap feeds;
    for (size_t i = 0; i < inputs.size(); ++i) {
      fs::path file = set / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(file)) continue;  // optional input left out
      const Tensor& declared = network->tensor(inputs[i]);
      feeds[inputs[i]] = asDeclared(readValueProtoFile(file.string(), declared.kind), declared.dtype);
    }
    // Graphs may list optional inputs with no data file: leave them out only if the executor allows.
    ValueMap results;
    try {
      results = onEngine ? runOnEngine(network, feeds, options) : executor.run(feeds);
    } catch (const Error& e) {
      // With --strict-device, a test whose layers cannot all run on the backend is not this run's.
      if (options.strictDevice && e.code() == ErrorCode::kUnsupported &&
          std::string(e.what()).find("--strict-device") != std::string::npos)
        return kSkipPrefix + std::string("not every layer runs on the backend: ") + e.what();
      throw;
    }
    const auto& outputs = network->outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      fs::path file = set / ("output_" + std::to_string(i) + ".pb");
      if (!fs::exists(file)) continue;
      const Tensor& declared = network->tensor(outputs[i]);
      Value expected = asDeclared(readValueProtoFile(file.string(), declared.kind), declared.dtype);
      std::string why = checkClose(results.at(outputs[i]), expected, 1e-3, 1e-7);
      if (!why.empty())
        return set.filename().string() + " output '" + outputs[i] + "': " + why;
    }
  }
  return "";
}

// The verdict of one test in this process: "" passed, else why not (kSkipPrefix: skipped).
std::string verdictOf(const fs::path& dir, bool onEngine, const Options& options) {
  try {
    return runTest(dir, onEngine, options);
  } catch (const Error& e) {
    return std::string(toString(e.code())) + ": " + e.what();
  } catch (const std::exception& e) {
    return std::string("uncaught exception: ") + e.what();
  }
}

// Runs tests [begin, end) of `dirs` in one child process (a GPU context is made once per child,
// not per test), which reports "index<TAB>verdict" lines through a pipe. A test that crashes or
// hangs ends the child: it fails, and the rest of the batch goes on in a new child.
struct Batch {
  pid_t pid = -1;
  int pipe = -1;
  size_t begin = 0, end = 0;
};

Batch startBatch(const std::vector<fs::path>& dirs, size_t begin, size_t end, const Options& options) {
  int fds[2];
  if (::pipe(fds) != 0) {
    std::perror("pipe");
    std::exit(2);
  }
  Batch batch{fork(), fds[0], begin, end};
  if (batch.pid == 0) {
    close(fds[0]);
    for (size_t i = begin; i < end; ++i) {
      alarm(unsigned(options.timeoutSeconds));
      std::string verdict = verdictOf(dirs[i], options.engine, options);
      alarm(0);
      std::replace(verdict.begin(), verdict.end(), '\n', ' ');
      const std::string line = std::to_string(i) + "\t" + (verdict.empty() ? "OK" : verdict) + "\n";
      if (write(fds[1], line.data(), line.size()) < 0) _exit(3);
    }
    _exit(0);
  }
  close(fds[1]);
  return batch;
}

// Collects a batch's verdicts; returns the index where it stopped early (a crash or timeout), or end.
size_t finishBatch(const Batch& batch, std::vector<std::string>& verdicts, int timeoutSeconds) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(batch.pipe, buf, sizeof buf)) > 0) text.append(buf, size_t(n));
  close(batch.pipe);
  int status = 0;
  waitpid(batch.pid, &status, 0);
  size_t next = batch.begin;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    const size_t index = std::stoul(line.substr(0, tab));
    const std::string verdict = line.substr(tab + 1);
    verdicts[index] = verdict == "OK" ? "" : verdict;
    next = index + 1;
  }
  if (next >= batch.end) return batch.end;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    verdicts[next] = sig == SIGALRM ? "timed out after " + std::to_string(timeoutSeconds) + " s"
                                    : std::string("crashed with signal ") + strsignal(sig);
  } else {
    verdicts[next] = "child exited without a verdict";
  }
  return next + 1;
}

// Verdicts of every test in `dirs`: `jobs` children at a time, `batchSize` tests each.
std::vector<std::string> runAll(const std::vector<fs::path>& dirs, const Options& options) {
  std::vector<std::string> verdicts(dirs.size());
  std::vector<std::pair<size_t, size_t>> pending;  // ranges still to run
  for (size_t b = 0; b < dirs.size(); b += size_t(options.batchSize))
    pending.emplace_back(b, std::min(dirs.size(), b + size_t(options.batchSize)));
  std::reverse(pending.begin(), pending.end());
  while (!pending.empty()) {
    std::vector<Batch> running;
    while (!pending.empty() && running.size() < size_t(options.jobs)) {
      running.push_back(startBatch(dirs, pending.back().first, pending.back().second, options));
      pending.pop_back();
    }
    for (const Batch& batch : running) {
      const size_t stopped = finishBatch(batch, verdicts, options.timeoutSeconds);
      if (stopped < batch.end) pending.emplace_back(stopped, batch.end);
    }
  }
  return verdicts;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--node-dir") opt.nodeDir = next();
    else if (a == "--excluded") opt.excludedFile = next();
    else if (a == "--filter") opt.filter = next();
    else if (a == "--min-pass-rate") opt.minPassRate = std::stod(next());
    else if (a == "--timeout") opt.timeoutSeconds = std::stoi(next());
    else if (a == "--batch") opt.batchSize = std::max(1, std::stoi(next()));
    else if (a == "--jobs") opt.jobs = std::max(1, std::stoi(next()));
    else if (a == "-v" || a == "--verbose") opt.verbose = true;
    else if (a == "--engine") opt.engine = true;
    else if (a == "--backend") {
      const std::string name = next();
      auto kind = parseBackendKind(name);
      if (!kind) {
        std::cerr << "--backend " << name << ": not a backend (cpu, cpu-device, cuda)\n";
        return 2;
      }
      opt.backend = *kind;
      opt.engine = true;
    } else if (a == "--strict-device") opt.strictDevice = true;
    else {
      std::cerr << "usage: kiln_onnx_node_tests --node-dir DIR [--excluded FILE] [--filter REGEX]\n"
                   "                            [--min-pass-rate 0.95] [--timeout SECONDS] [--engine] [-v]\n"
                   "                            [--backend cpu|cpu-device|cuda] [--strict-device]\n"
                   "                            [--batch TESTS_PER_PROCESS] [--jobs PROCESSES]\n";
      return 2;
    }
  }
  if (opt.nodeDir.empty() || !fs::is_directory(opt.nodeDir)) {
    std::cout << "SKIPPED: ONNX node test data not found ('" << opt.nodeDir
              << "'); install Debian's libonnx-testdata (scripts/setup.sh does)\n";
    return 0;
  }
  auto excluded = loadExcluded(opt.excludedFile);
  std::vector<fs::path> tests;
  for (const auto& entry : fs::directory_iterator(opt.nodeDir))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) tests.push_back(entry.path());
  std::sort(tests.begin(), tests.end());
  std::regex filter(opt.filter.empty() ? ".*" : opt.filter);
  int passed = 0, failed = 0, skipped = 0;
  std::cout.setf(std::ios::unitbuf);
  std::vector<fs::path> toRun;
  for (const auto& dir : tests) {
    std::string name = dir.filename().string();
    if (!std::regex_search(name, filter)) continue;
    if (auto it = excluded.find(name); it != excluded.end()) {
      ++skipped;
      if (opt.verbose) std::cout << "SKIP " << name << ": " << it->second << "\n";
      continue;
    }
    toRun.push_back(dir);
  }
  const std::vector<std::string> verdicts = runAll(toRun, opt);
  for (size_t i = 0; i < toRun.size(); ++i) {
    const std::string name = toRun[i].filename().string();
    std::string why = verdicts[i];
    if (why.rfind(kSkipPrefix, 0) == 0) {
      ++skipped;
      if (opt.verbose) std::cout << "SKIP " << name << ": " << why.substr(std::strlen(kSkipPrefix)) << "\n";
    } else if (why.empty()) {
      ++passed;
      if (opt.verbose) std::cout << "PASS " << name << "\n";
    } else {
      ++failed;
      std::replace(why.begin(), why.end(), '\n', ' ');
      std::cout << "FAIL " << name << ": " << why << "\n";
    }
  }
  int run = passed + failed;
  double rate = run ? double(passed) / run : 1.0;
  std::printf("pass rate %.1f%% of %d non-excluded tests (target %.1f%%)\n", rate * 100, run, opt.minPassRate * 100);
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return rate + 1e-9 >= opt.minPassRate ? 0 : 1;
}
