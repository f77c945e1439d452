#pragma once
// Runs the engine's long jobs on a worker thread (QtConcurrent) so the window never freezes:
// builds (with progress, log and cancel through kiln::BuildObserver / kiln::Logger; INT8
// calibration is a phase of the build), profile runs, accuracy comparisons (one engine, or every
// engine built side by side) and the precision tools (bisect, advisor; progress and cancel
// through kiln::PrecisionDebugObserver). One job at a time; results arrive as signals on the UI
// thread.
#include <accuracy/accuracy_panel.h>
#include <common/input_data.h>

#include <kiln/builder.h>
#include <kiln/network.h>
#include <kiln/precision_bisect.h>
#include <kiln/quantization_advisor.h>
#include <kiln/profile_report.h>
#include <kiln/runtime.h>

#include <QFutureWatcher>
#include <QObject>

#include <any>
#include <atomic>
#include <functional>
#include <memory>

// A finished build: the plan, its report, and the plan loaded as an engine.
struct BuiltEngine {
  std::vector<uint8_t> plan;
  kiln::BuildReport report;
  std::shared_ptr<const kiln::Engine> engine;
  QString precision;  // "fp16", "int8"
  bool cudaGraphs = false;  // profile it replayed as a CUDA graph (BuilderConfig::cudaGraphs)
  kiln::BuilderConfig config;  // what it was built with (the precision tools rebuild it with layers held back)
};

class EngineController : public QObject {
  Q_OBJECT
 public:
  enum class Job { kNone, kBuild, kProfile, kCompare, kCompareEngines, kBisect, kAdvise };

  explicit EngineController(QObject* parent = nullptr);
  ~EngineController() override;

  bool isBusy() const { return job_ != Job::kNone; }
  Job job() const { return job_; }

  void build(std::shared_ptr<const kiln::Network> network, const kiln::BuilderConfig& config, const QString& precision);
  // Per-layer times; with `cudaGraph` the run's total is the engine's launches replayed as a CUDA graph.
  void profile(std::shared_ptr<const kiln::Engine> engine, const kiln::views::InputSource& inputs, int iterations,
               bool cudaGraph = false);
  void compare(std::shared_ptr<const kiln::Network> network, std::shared_ptr<const BuiltEngine> built,
               const kiln::views::InputSource& inputs, const kiln::Tolerance& tolerance);
  // Every engine against the same reference on the same inputs, a column each.
  void compareEngines(std::shared_ptr<const kiln::Network> network,
                      std::vector<std::shared_ptr<const BuiltEngine>> engines, const kiln::views::InputSource& inputs,
                      const kiln::Tolerance& tolerance);
  // The precision bisect or the advisor on `options` (the engine's config, inputs and criterion).
  void bisectPrecision(std::shared_ptr<const kiln::Network> network, const kiln::PrecisionDebugOptions& options);
  void adviseQuantization(std::shared_ptr<const kiln::Network> network, const kiln::PrecisionDebugOptions& options,
                          int profileIterations);
  // Stops a build (calibration included) or a precision tool at its next progress point; profile
  // and compare runs finish unseen.
  void cancel();
  // Waits for the running job (used when the window closes).
  void waitForIdle();

 signals:
  void jobStarted(Job job);
  void buildProgress(double fraction, const QString& phase, const QString& layer, const QString& tactic);
  void logLine(const QString& line);
  void buildFinished(std::shared_ptr<const BuiltEngine> built);
  void profileFinished(const kiln::ProfileReport& report);
  void comparisonFinished(const kiln::views::AccuracyRun& run);
  void enginesCompared(const std::vector<kiln::views::EngineColumn>& engines);
  void precisionProgress(const QString& what, double fraction);
  void precisionTrial(const kiln::PrecisionTrial& trial);
  void bisectFinished(const kiln::PrecisionBisectResult& result);
  void adviceFinished(const kiln::QuantizationAdvice& advice);
  void jobFailed(Job job, const QString& message);
  void jobCancelled(Job job);

 private:
  struct Outcome {
    std::any result;
    QString error;
    bool cancelled = false;
  };
  void start(Job job, std::function<std::any()> work, std::function<void(std::any&)> deliver);

  Job job_ = Job::kNone;
  std::atomic<bool> cancelRequested_ = false;
  std::unique_ptr<QFutureWatcher<Outcome>> watcher_;
};
