#include "engine_controller.h"

#include <kiln/error.h>
#include <kiln/performance.h>
#include <kiln/runners.h>

#include <QtConcurrent/QtConcurrentRun>

namespace {

// Forwards the builder's progress and log to the controller's signals (queued onto the UI thread)
// and tells the builder when the user cancelled.
class BuildBridge : public kiln::BuildObserver, public kiln::Logger {
 public:
  BuildBridge(EngineController* controller, const std::atomic<bool>& cancelled)
      : controller_(controller), cancelled_(cancelled) {}

  void progress(const kiln::BuildProgress& progress) override {
    QMetaObject::invokeMethod(controller_, [controller = controller_, fraction = progress.fraction,
                                            phase = QString::fromStdString(progress.phase),
                                            layer = QString::fromStdString(progress.layer),
                                            tactic = QString::fromStdString(progress.tactic)] {
      emit controller->buildProgress(fraction, phase, layer, tactic);
    }, Qt::QueuedConnection);
  }
  bool cancelled() override { return cancelled_.load(); }
  void log(kiln::Severity severity, const std::string& message) override {
    const QString line = QStringLiteral("%1: %2").arg(QLatin1String(kiln::toString(severity)), QString::fromStdString(message));
    QMetaObject::invokeMethod(controller_, [controller = controller_, line] { emit controller->logLine(line); },
                              Qt::QueuedConnection);
  }

 private:
  EngineController* controller_;
  const std::atomic<bool>& cancelled_;
};

// Forwards the precision tools' trials and progress to the controller's signals and tells them
// when the user cancelled.
class PrecisionBridge : public kiln::PrecisionDebugObserver {
 public:
  PrecisionBridge(EngineController* controller, const std::atomic<bool>& cancelled)
      : controller_(controller), cancelled_(cancelled) {}

  void trial(const kiln::PrecisionTrial& trial) override {
    QMetaObject::invokeMethod(controller_, [controller = controller_, trial] { emit controller->precisionTrial(trial); },
                              Qt::QueuedConnection);
  }
  void progress(const std::string& what, double fraction) override {
    QMetaObject::invokeMethod(controller_, [controller = controller_, what = QString::fromStdString(what), fraction] {
      emit controller->precisionProgress(what, fraction);
    }, Qt::QueuedConnection);
  }
  bool cancelled() override { return cancelled_.load(); }

 private:
  EngineController* controller_;
  const std::atomic<bool>& cancelled_;
};

// Wraps a runner so the outputs it returns are kept (for re-measuring at other tolerances).
kiln::Runner keepingOutputs(kiln::Runner runner, std::map<std::string, kiln::HostTensor>& kept) {
  return [runner = std::move(runner), &kept](const auto& inputs, const kiln::TensorObserver& observer) {
    auto outputs = runner(inputs, observer);
    for (const auto& [name, tensor] : outputs) kept[name] = tensor.clone();
    return outputs;
  };
}

}  // namespace

EngineController::EngineController(QObject* parent) : QObject(parent) {}

EngineController::~EngineController() {
  cancel();
  waitForIdle();
}

void EngineController::start(Job job, std::function<std::any()> work, std::function<void(std::any&)> deliver) {
  job_ = job;
  cancelRequested_ = false;
  watcher_ = std::make_unique<QFutureWatcher<Outcome>>();
  connect(watcher_.get(), &QFutureWatcherBase::finished, this, [this, job, deliver = std::move(deliver)] {
    // A slot of the signals below may start the next job, which replaces watcher_: keep this one
    // (and so this lambda) alive until its signal has returned.
    QFutureWatcher<Outcome>* finished = watcher_.release();
    finished->deleteLater();
    Outcome outcome = finished->result();
    job_ = Job::kNone;
    if (outcome.cancelled || cancelRequested_) emit jobCancelled(job);
    else if (!outcome.error.isEmpty()) emit jobFailed(job, outcome.error);
    else deliver(outcome.result);
  });
  emit jobStarted(job);
  watcher_->setFuture(QtConcurrent::run([work = std::move(work)] {
    Outcome outcome;
    try {
      outcome.result = work();
    } catch (const kiln::Error& e) {
      outcome.cancelled = e.code() == kiln::ErrorCode::kCancelled;
      outcome.error = QString::fromUtf8(e.what());
    } catch (const std::exception& e) {
      outcome.error = QObject::tr("unexpected error: %1").arg(QString::fromUtf8(e.what()));
    }
    return outcome;
  }));
}

void EngineController::build(std::shared_ptr<const kiln::Network> network, const kiln::BuilderConfig& config,
                             const QString& precision) {
  if (isBusy() || !network) return;
  start(
      Job::kBuild,
      [this, network, config, precision] {
        BuildBridge bridge(this, cancelRequested_);
        kiln::BuildResult result = kiln::Builder(bridge).build(*network, config, &bridge);
        auto built = std::make_shared<BuiltEngine>();
        built->engine = kiln::Runtime().load(result.plan);
        built->plan = std::move(result.plan);
        built->report = std::move(result.report);
        built->precision = precision;
        built->cudaGraphs = config.cudaGraphs;
        built->config = config;
        return std::any(std::shared_ptr<const BuiltEngine>(std::move(built)));
      },
      [this](std::any& result) { emit buildFinished(std::any_cast<std::shared_ptr<const BuiltEngine>>(result)); });
}

void EngineController::profile(std::shared_ptr<const kiln::Engine> engine, const kiln::views::InputSource& source,
                               int iterations, bool cudaGraph) {
  if (isBusy() || !engine) return;
  start(
      Job::kProfile,
      [engine, source, iterations, cudaGraph] {
        const auto inputs = kiln::views::makeInputs(engine->ioTensors(), engine->profiles(), source);
        if (!cudaGraph) return std::any(kiln::profileEngine(*engine, inputs, iterations));
        // Layer times need each launch on its own; the total comes from graph replays without them.
        kiln::PerformanceOptions options;
        options.iterations = iterations;
        options.durationSeconds = 0;
        options.dataTransfers = false;
        options.layerProfileRuns = iterations;
        options.cudaGraph = true;
        const kiln::PerformanceReport measured = kiln::measurePerformance(*engine, inputs, options);
        kiln::ProfileReport report = measured.layers;
        report.totalMedianMs = measured.compute.median;
        return std::any(std::move(report));
      },
      [this](std::any& result) { emit profileFinished(std::any_cast<const kiln::ProfileReport&>(result)); });
}

void EngineController::compare(std::shared_ptr<const kiln::Network> network, std::shared_ptr<const BuiltEngine> built,
                               const kiln::views::InputSource& source, const kiln::Tolerance& tolerance) {
  if (isBusy() || !network || !built) return;
  start(
      Job::kCompare,
      [network, built, source, tolerance] {
        const auto inputs = kiln::views::makeInputs(built->engine->ioTensors(), built->engine->profiles(), source);
        kiln::views::AccuracyRun run;
        run.candidateLabel = QObject::tr("%1 engine").arg(built->precision);
        run.report = kiln::compareRunners(keepingOutputs(kiln::makeReferenceRunner(network), run.reference),
                                          keepingOutputs(kiln::makeEngineRunner(built->engine), run.candidate), inputs,
                                          tolerance, /*perLayer=*/true);
        return std::any(std::move(run));
      },
      [this](std::any& result) { emit comparisonFinished(std::any_cast<const kiln::views::AccuracyRun&>(result)); });
}

void EngineController::compareEngines(std::shared_ptr<const kiln::Network> network,
                                      std::vector<std::shared_ptr<const BuiltEngine>> engines,
                                      const kiln::views::InputSource& source, const kiln::Tolerance& tolerance) {
  if (isBusy() || !network || engines.empty()) return;
  start(
      Job::kCompareEngines,
      [network, engines, source, tolerance] {
        // One input set for all: the first engine's shapes (every engine comes from this model).
        const auto inputs =
            kiln::views::makeInputs(engines.front()->engine->ioTensors(), engines.front()->engine->profiles(), source);
        const auto reference = kiln::makeReferenceRunner(network)(inputs, nullptr);
        const kiln::Runner replay = [&reference](const auto&, const kiln::TensorObserver&) { return reference; };
        std::vector<kiln::views::EngineColumn> columns;
        for (const auto& built : engines) {
          const kiln::ComparisonReport report =
              kiln::compareRunners(replay, kiln::makeEngineRunner(built->engine), inputs, tolerance, /*perLayer=*/false);
          columns.push_back({QObject::tr("%1 engine").arg(built->precision), report.outputs});
        }
        return std::any(std::move(columns));
      },
      [this](std::any& result) {
        emit enginesCompared(std::any_cast<const std::vector<kiln::views::EngineColumn>&>(result));
      });
}

void EngineController::bisectPrecision(std::shared_ptr<const kiln::Network> network,
                                       const kiln::PrecisionDebugOptions& options) {
  if (isBusy() || !network) return;
  start(
      Job::kBisect,
      [this, network, options] {
        PrecisionBridge bridge(this, cancelRequested_);
        return std::any(kiln::bisectPrecision(*network, options, {}, &bridge));
      },
      [this](std::any& result) { emit bisectFinished(std::any_cast<const kiln::PrecisionBisectResult&>(result)); });
}

void EngineController::adviseQuantization(std::shared_ptr<const kiln::Network> network,
                                          const kiln::PrecisionDebugOptions& options, int profileIterations) {
  if (isBusy() || !network) return;
  start(
      Job::kAdvise,
      [this, network, options, profileIterations] {
        PrecisionBridge bridge(this, cancelRequested_);
        kiln::QuantizationAdvisorOptions advisor;
        advisor.profileIterations = profileIterations;
        return std::any(kiln::adviseQuantization(*network, options, advisor, &bridge));
      },
      [this](std::any& result) { emit adviceFinished(std::any_cast<const kiln::QuantizationAdvice&>(result)); });
}

void EngineController::cancel() {
  if (isBusy()) cancelRequested_ = true;
}

void EngineController::waitForIdle() {
  if (watcher_) watcher_->waitForFinished();
}
