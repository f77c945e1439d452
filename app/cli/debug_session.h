#pragma once
// What `kiln debug precision` and `kiln debug advise` share: the model and its reduced-precision
// build, the inputs both sides run, the accuracy criterion, the trials printed as they finish, and
// the constraints file they write.
#include "precision_options.h"
#include "run_inputs.h"

#include <kiln/network.h>
#include <kiln/precision_debug.h>

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kiln::cli {

struct DebugOptions {
  std::string modelPath, keepPrecision, metric, reference = "model", constraintsPath, exportPath;
  PrecisionOptions precision;
  InputRequest inputs;
  std::string dataDir;
  int64_t dataBatches = 0;
  Tolerance tolerance;
  double threshold = 0.99;
  CLI::Option *atolOption = nullptr, *rtolOption = nullptr, *thresholdOption = nullptr;
};

void addDebugOptions(CLI::App* command, DebugOptions& o);

struct DebugSession {
  std::shared_ptr<Network> network;
  PrecisionDebugOptions options;
};

// Loads the model and its inputs and checks the options (usage mistakes: kiln::Error(kInvalidArgument)).
DebugSession prepareDebugSession(const DebugOptions& o);

// Each trial as a table row on stdout as it finishes; the build under way as a progress bar on a
// terminal's stderr.
class TrialPrinter : public PrecisionDebugObserver {
 public:
  explicit TrialPrinter(const AccuracyCriterion& criterion);
  ~TrialPrinter() override;
  void trial(const PrecisionTrial& trial) override;
  void progress(const std::string& what, double fraction) override;

 private:
  struct Bar;
  std::unique_ptr<Bar> bar_;
  AccuracyCriterion criterion_;
  bool headed_ = false;
};

// One line about a score: "worst cosine 0.99512, max abs error 1.2e-02, tolerance ratio 3.1 (FAIL)".
std::string describeScore(const AccuracyScore& score, const AccuracyCriterion& criterion);

// Writes o.constraintsPath (atomically) when given: the session's own constraints and `keep` at
// `keepPrecision`, with comment lines saying what they are for; says so on stdout.
void writeConstraints(const DebugOptions& o, const DebugSession& session, const std::vector<std::string>& keep,
                      const std::string& summary);

}  // namespace kiln::cli
