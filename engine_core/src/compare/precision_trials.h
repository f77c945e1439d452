#pragma once
// The trials of the precision tools (precision_bisect.cpp, quantization_advisor.cpp): the
// reference outputs, then builds of the reduced-precision config with chosen candidate layers held
// back, each run on every input set and scored. Trials share a calibration cache and a timing
// cache (the caller's, else temporary ones), so every trial quantizes with the same scales and
// times a layer once.
#include <kiln/build_report.h>
#include <kiln/logger.h>
#include <kiln/network.h>
#include <kiln/precision_debug.h>
#include <kiln/runtime.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace kiln {

class PrecisionTrials {
 public:
  struct Outcome {
    PrecisionTrial trial;
    std::shared_ptr<Engine> engine;
  };

  // Checks the options and computes the reference outputs.
  PrecisionTrials(const Network& network, const PrecisionDebugOptions& options, PrecisionDebugObserver* observer,
                  Logger& logger);
  ~PrecisionTrials();
  PrecisionTrials(const PrecisionTrials&) = delete;
  PrecisionTrials& operator=(const PrecisionTrials&) = delete;

  // The first trial: nothing held back. Its layers below keepPrecision become the candidates (none:
  // kiln::Error saying the build reduces nothing).
  Outcome runReduced();
  // Holds `kept` (candidates) back; the order of `kept` does not matter.
  Outcome run(const std::string& phase, const std::string& note, const std::set<std::string>& kept);

  const std::vector<std::string>& candidates() const { return candidates_; }
  const std::vector<PrecisionTrial>& trials() const { return trials_; }
  // `layers` in the candidates' (topological) order.
  std::vector<std::string> inOrder(const std::set<std::string>& layers) const;
  // Stops with ErrorCode::kCancelled when the observer asks.
  void checkCancelled() const;

 private:
  Outcome build(const std::string& phase, const std::string& note, const std::set<std::string>& kept,
                BuildReport* report);
  std::vector<InputSet> runEngine(const Engine& engine) const;

  std::shared_ptr<const Network> network_;
  PrecisionDebugOptions options_;
  PrecisionDebugObserver* observer_;
  Logger& logger_;
  std::string tempDir_;
  std::vector<InputSet> reference_;
  std::vector<std::string> candidates_;
  std::vector<PrecisionTrial> trials_;
};

// "'a', 'b', 'c' and 4 more": a list of layers for notes and messages.
std::string nameLayers(const std::vector<std::string>& layers, size_t shown = 3);

}  // namespace kiln
