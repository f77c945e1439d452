#include "engine_panels.h"

#include "document.h"

#include <accuracy/accuracy_panel.h>
#include <accuracy/precision_debug_panel.h>
#include <building/build_panel.h>
#include <common/value_format.h>
#include <fusion/fusion_panel.h>
#include <graph/graph_scene.h>
#include <timing/timing_panel.h>

#include <kiln/error.h>

#include <QAction>
#include <QCheckBox>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>

using kiln::views::InputSource;

namespace {

constexpr int kStatusTimeoutMs = 8000;

QString jobName(EngineController::Job job) {
  switch (job) {
    case EngineController::Job::kBuild: return QObject::tr("Build");
    case EngineController::Job::kProfile: return QObject::tr("Profile run");
    case EngineController::Job::kCompare: return QObject::tr("Accuracy comparison");
    case EngineController::Job::kCompareEngines: return QObject::tr("Engine comparison");
    case EngineController::Job::kBisect: return QObject::tr("Precision bisect");
    case EngineController::Job::kAdvise: return QObject::tr("Quantization advisor");
    default: return {};
  }
}

// What a person can do about a failed job, after the kiln::Error message.
QString adviceFor(EngineController::Job job) {
  switch (job) {
    case EngineController::Job::kBuild:
      return QObject::tr("Check the optimization profile, precisions and INT8 calibration in the Build panel, then "
                         "build again.");
    case EngineController::Job::kBisect:
    case EngineController::Job::kAdvise:
      return QObject::tr("Check the engine's INT8 calibration and the Accuracy panel's inputs, or loosen the "
                         "criterion.");
    case EngineController::Job::kProfile:
      return QObject::tr("Rebuild the engine, or check that the profile's opt shapes are valid inputs.");
    case EngineController::Job::kCompare:
    case EngineController::Job::kCompareEngines:
      return QObject::tr("Check the input folder (one <input>.npy or .pb per model input, in the engine's shapes) "
                         "or use random inputs.");
    default: return {};
  }
}

}  // namespace

EnginePanels::EnginePanels(QMainWindow* window, Document* document, kiln::views::GraphScene* scene)
    : QObject(window), window_(window), document_(document), scene_(scene) {
  controller_ = new EngineController(this);
  build_ = new kiln::views::BuildPanel(window);
  fusion_ = new kiln::views::FusionPanel(window);
  fusion_->setScene(scene);
  timing_ = new kiln::views::TimingPanel(window);
  accuracy_ = new kiln::views::AccuracyPanel(window);
  accuracy_->restoreSettings();
  precision_ = new kiln::views::PrecisionDebugPanel(window);
  buildDock_ = addDock(tr("Build"), QStringLiteral("BuildDock"), build_, Qt::LeftDockWidgetArea);
  fusionDock_ = addDock(tr("Fusion"), QStringLiteral("FusionDock"), fusion_, Qt::BottomDockWidgetArea);
  timingDock_ = addDock(tr("Timings"), QStringLiteral("TimingDock"), timing_, Qt::BottomDockWidgetArea);
  accuracyDock_ = addDock(tr("Accuracy"), QStringLiteral("AccuracyDock"), accuracy_, Qt::BottomDockWidgetArea);
  precisionDock_ = addDock(tr("Precision"), QStringLiteral("PrecisionDock"), precision_, Qt::BottomDockWidgetArea);
  window->tabifyDockWidget(fusionDock_, timingDock_);
  window->tabifyDockWidget(timingDock_, accuracyDock_);
  window->tabifyDockWidget(accuracyDock_, precisionDock_);
  fusionDock_->raise();

  connect(build_, &kiln::views::BuildPanel::buildRequested, this, &EnginePanels::startBuild);
  connect(build_, &kiln::views::BuildPanel::cancelRequested, controller_, &EngineController::cancel);
  connect(build_, &kiln::views::BuildPanel::canBuildChanged, this, &EnginePanels::updateActions);
  connect(timing_, &kiln::views::TimingPanel::profileRequested, this, &EnginePanels::startProfile);
  connect(timing_, &kiln::views::TimingPanel::loadRequested, this, [this] {
    QSettings settings;
    const QString path = QFileDialog::getOpenFileName(window_, tr("Open Profile"), settings.value("files/lastDir").toString(),
                                                      tr("Kiln profiles (*.json);;All files (*)"));
    if (!path.isEmpty()) openProfile(path);
  });
  connect(timing_, &kiln::views::TimingPanel::heatmapToggled, this,
          [this](bool shown) { showHeatmap(shown ? Heatmap::kTime : heatmap_ == Heatmap::kTime ? Heatmap::kNone : heatmap_); });
  connect(accuracy_, &kiln::views::AccuracyPanel::compareRequested, this, &EnginePanels::startComparison);
  connect(accuracy_, &kiln::views::AccuracyPanel::heatmapToggled, this,
          [this](bool shown) { showHeatmap(shown ? Heatmap::kError : heatmap_ == Heatmap::kError ? Heatmap::kNone : heatmap_); });
  connect(accuracy_, &kiln::views::AccuracyPanel::compareEnginesRequested, this, &EnginePanels::startEngineComparison);
  connect(precision_, &kiln::views::PrecisionDebugPanel::bisectRequested, this, &EnginePanels::startBisect);
  connect(precision_, &kiln::views::PrecisionDebugPanel::adviceRequested, this, &EnginePanels::startAdvice);
  connect(precision_, &kiln::views::PrecisionDebugPanel::cancelRequested, controller_, &EngineController::cancel);
  connect(precision_, &kiln::views::PrecisionDebugPanel::heatmapToggled, this, [this](bool shown) {
    showHeatmap(shown ? Heatmap::kPrecision : heatmap_ == Heatmap::kPrecision ? Heatmap::kNone : heatmap_);
  });

  connect(controller_, &EngineController::jobStarted, this, [this](EngineController::Job job) {
    if (job == EngineController::Job::kBuild) build_->buildStarted();
    if (job == EngineController::Job::kProfile) timing_->setRunning(true);
    if (job == EngineController::Job::kCompare || job == EngineController::Job::kCompareEngines)
      accuracy_->setRunning(true);
    if (job == EngineController::Job::kBisect || job == EngineController::Job::kAdvise) {
      precision_->setRunning(true);
      raise(precisionDock_);
    }
    status(tr("%1 running…").arg(jobName(job)));
    updateActions();
  });
  connect(controller_, &EngineController::buildProgress, build_, &kiln::views::BuildPanel::showProgress);
  connect(controller_, &EngineController::logLine, build_, &kiln::views::BuildPanel::appendLog);
  connect(controller_, &EngineController::buildFinished, this, &EnginePanels::onBuilt);
  connect(controller_, &EngineController::profileFinished, this, [this](const kiln::ProfileReport& report) {
    timing_->setProfile(report, tr("local run"));
    raise(timingDock_);
    const bool graph = document_->built() && document_->built()->cudaGraphs;
    status((graph ? tr("Profiled: %1 ms per run as a CUDA graph") : tr("Profiled: %1 ms per run"))
               .arg(report.totalMedianMs, 0, 'f', 3));
    updateActions();
    emit profileShown();
  });
  connect(controller_, &EngineController::comparisonFinished, this, [this](const kiln::views::AccuracyRun& run) {
    accuracy_->setRun(run);
    raise(accuracyDock_);
    status(accuracy_->passes() ? tr("Accuracy: all outputs within tolerance") : tr("Accuracy: some outputs fail"));
    updateActions();
  });
  connect(controller_, &EngineController::enginesCompared, this,
          [this](const std::vector<kiln::views::EngineColumn>& engines) {
            accuracy_->setEngineComparison(engines);
            raise(accuracyDock_);
            status(tr("Compared %n engine(s) with the FP32 reference", nullptr, int(engines.size())));
            updateActions();
          });
  connect(controller_, &EngineController::precisionProgress, precision_, &kiln::views::PrecisionDebugPanel::showProgress);
  connect(controller_, &EngineController::precisionTrial, precision_, &kiln::views::PrecisionDebugPanel::addTrial);
  connect(controller_, &EngineController::bisectFinished, this, [this](const kiln::PrecisionBisectResult& result) {
    precision_->setRunning(false);
    precision_->setBisectResult(result, debugCriterion_);
    status(precision_->statusText());
    updateActions();
  });
  connect(controller_, &EngineController::adviceFinished, this, [this](const kiln::QuantizationAdvice& advice) {
    precision_->setRunning(false);
    precision_->setAdvice(advice);
    status(precision_->statusText());
    updateActions();
  });
  connect(controller_, &EngineController::jobFailed, this, &EnginePanels::onFailed);
  connect(controller_, &EngineController::jobCancelled, this, &EnginePanels::onCancelled);
  connect(document_, &Document::builtChanged, this, &EnginePanels::updateActions);
}

QDockWidget* EnginePanels::addDock(const QString& title, const QString& objectName, QWidget* panel,
                                   Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, window_);
  dock->setObjectName(objectName);
  dock->setWidget(panel);
  window_->addDockWidget(area, dock);
  return dock;
}

void EnginePanels::addActions(QMenu* fileMenu, QMenu* buildMenu) {
  savePlanAction_ = new QAction(tr("Save &Plan…"), this);
  savePlanAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
  connect(savePlanAction_, &QAction::triggered, this, &EnginePanels::chooseAndSavePlan);
  fileMenu->insertAction(fileMenu->actions().value(4), savePlanAction_);  // after Export Graph Image

  buildAction_ = buildMenu->addAction(tr("&Build Engine"), this, &EnginePanels::startBuild);
  buildAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
  cancelAction_ = buildMenu->addAction(tr("&Cancel"), controller_, &EngineController::cancel);
  cancelAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
  buildMenu->addSeparator();
  profileAction_ = buildMenu->addAction(tr("&Profile Engine"), this, &EnginePanels::startProfile);
  profileAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
  compareAction_ = buildMenu->addAction(tr("Compare with &FP32"), this, &EnginePanels::startComparison);
  compareAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A));
  compareEnginesAction_ = buildMenu->addAction(tr("Compare All &Engines"), this, &EnginePanels::startEngineComparison);
  bisectAction_ = buildMenu->addAction(tr("Find &Layers to Keep"), this, &EnginePanels::startBisect);
  adviseAction_ = buildMenu->addAction(tr("&Advise on Quantization"), this, &EnginePanels::startAdvice);
  buildMenu->addSeparator();
  buildMenu->addAction(savePlanAction_);
  buildMenu->menuAction()->setVisible(true);
  updateActions();
}

void EnginePanels::updateActions() {
  const bool busy = controller_->isBusy();
  const bool hasEngine = document_->built() != nullptr;
  const BuiltEngine* built = document_->built().get();
  const bool reduced = built && (built->config.allowINT8 || built->config.allowFP16 || built->config.allowBF16 ||
                                 built->config.allowFP8);
  if (buildAction_) {
    buildAction_->setEnabled(build_->canBuild() && !busy);
    cancelAction_->setEnabled(busy);
    savePlanAction_->setEnabled(hasEngine);
    profileAction_->setEnabled(hasEngine && !busy);
    compareAction_->setEnabled(hasEngine && !busy);
    compareEnginesAction_->setEnabled(hasEngine && !busy);
    bisectAction_->setEnabled(reduced && !busy);
    adviseAction_->setEnabled(reduced && !busy);
  }
  const QString whyNotDebug = busy ? tr("Another job is running")
                                   : tr("Build an engine in a reduced precision (INT8, FP16 or BF16) first");
  precision_->setCanRun(reduced && !busy, whyNotDebug);
  const QString why = busy ? tr("Another job is running") : tr("Build an engine first (Ctrl+B)");
  timing_->setCanProfile(hasEngine && !busy, why);
  accuracy_->setCanCompare(hasEngine && !busy, why);
  accuracy_->setCanCompareEngines(hasEngine && !busy, why);
  if (!busy) {
    timing_->setRunning(false);
    accuracy_->setRunning(false);
    timing_->setCanProfile(hasEngine, why);
    accuracy_->setCanCompare(hasEngine, why);
    accuracy_->setCanCompareEngines(hasEngine, why);
    precision_->setRunning(false);
    precision_->setCanRun(reduced, whyNotDebug);
  }
}

void EnginePanels::modelLoaded() {
  build_->setNetwork(document_->network().get());
  fusion_->clear();
  timing_->clear();
  accuracy_->clear();
  precision_->clear();
  heatmap_ = Heatmap::kNone;
  updateActions();
}

void EnginePanels::startBuild() {
  if (!build_->canBuild() || controller_->isBusy()) return;
  build_->saveSettings();
  raise(buildDock_);
  controller_->build(document_->network(), build_->config(), build_->precisionLabel());
}

void EnginePanels::startProfile() {
  if (!document_->built() || controller_->isBusy()) return;
  controller_->profile(document_->built()->engine, InputSource{}, timing_->iterations(), document_->built()->cudaGraphs);
}

void EnginePanels::startComparison() {
  if (!document_->built() || controller_->isBusy()) return;
  accuracy_->saveSettings();
  controller_->compare(document_->network(), document_->built(), accuracy_->inputSource(), accuracy_->tolerance());
}

void EnginePanels::startEngineComparison() {
  if (document_->engines().empty() || controller_->isBusy()) return;
  accuracy_->saveSettings();
  controller_->compareEngines(document_->network(), document_->engines(), accuracy_->inputSource(),
                              accuracy_->tolerance());
}

kiln::PrecisionDebugOptions EnginePanels::precisionDebugOptions() const {
  const BuiltEngine& built = *document_->built();
  const kiln::views::PrecisionDebugRequest request = precision_->request();
  kiln::PrecisionDebugOptions options;
  options.config = built.config;
  options.config.allowTF32 = false;  // FP32 layers stay FP32: the trials differ only in what they hold back
  options.keepPrecision = request.keepPrecision;
  options.criterion = request.criterion;
  options.criterion.tolerance = accuracy_->tolerance();  // used by a tolerance criterion
  // Random inputs: two sets (the seed and the next), so one lucky set cannot pass a layer.
  InputSource source = accuracy_->inputSource();
  const int sets = source.kind == InputSource::Kind::kRandom ? 2 : 1;
  for (int s = 0; s < sets; ++s, ++source.seed)
    options.inputs.push_back(kiln::views::makeInputs(built.engine->ioTensors(), built.engine->profiles(), source));
  return options;
}

void EnginePanels::startBisect() {
  if (!document_->built() || controller_->isBusy()) return;
  try {
    const kiln::PrecisionDebugOptions options = precisionDebugOptions();
    debugCriterion_ = options.criterion;
    controller_->bisectPrecision(document_->network(), options);
  } catch (const kiln::Error& e) {
    onFailed(EngineController::Job::kBisect, QString::fromUtf8(e.what()));
  }
}

void EnginePanels::startAdvice() {
  if (!document_->built() || controller_->isBusy()) return;
  try {
    controller_->adviseQuantization(document_->network(), precisionDebugOptions(), /*profileIterations=*/5);
  } catch (const kiln::Error& e) {
    onFailed(EngineController::Job::kAdvise, QString::fromUtf8(e.what()));
  }
}

void EnginePanels::onBuilt(std::shared_ptr<const BuiltEngine> built) {
  const auto& report = built->report;
  // A no-break space keeps the time and its unit on one line when the label wraps.
  const QString summary = tr("Built %1 engine: %2 ONNX nodes → %3 layers, plan %4, in %5\u00A0s")
                              .arg(built->precision)
                              .arg(report.onnxNodeCount)
                              .arg(report.layers.size())
                              .arg(kiln::views::formatBytes(int64_t(built->plan.size())))
                              .arg(report.buildMilliseconds / 1000.0, 0, 'f', 2);
  for (const std::string& warning : report.warnings) build_->appendLog(tr("warning: %1").arg(QString::fromStdString(warning)));
  build_->buildFinished(summary);
  document_->setBuilt(built);
  fusion_->setReport(report);
  timing_->clear();
  accuracy_->clear();
  precision_->clear();
  if (heatmap_ == Heatmap::kPrecision) showHeatmap(Heatmap::kNone);
  raise(fusionDock_);
  makeRoomForResults(fusionDock_);
  status(summary);
  updateActions();
}

void EnginePanels::onFailed(EngineController::Job job, const QString& message) {
  if (job == EngineController::Job::kBuild) build_->buildFailed(message);
  if (job == EngineController::Job::kBisect || job == EngineController::Job::kAdvise) precision_->showFailure(message);
  updateActions();
  // The status bar keeps the reason after the dialog is closed (or when there is none).
  status(tr("%1 failed: %2").arg(jobName(job), message.section(QLatin1Char('\n'), 0, 0)));
  if (!dialogsEnabled_) return;
  QMessageBox box(QMessageBox::Warning, tr("%1 failed").arg(jobName(job)), message, QMessageBox::Ok, window_);
  box.setInformativeText(adviceFor(job));
  box.exec();
}

void EnginePanels::onCancelled(EngineController::Job job) {
  if (job == EngineController::Job::kBuild) build_->buildCancelled();
  if (job == EngineController::Job::kBisect || job == EngineController::Job::kAdvise) precision_->showCancelled();
  updateActions();
  status(tr("%1 cancelled").arg(jobName(job)));
}

void EnginePanels::chooseAndSavePlan() {
  if (!document_->built()) return;
  QSettings settings;
  const QString suggested = QFileInfo(settings.value("files/lastPlanDir").toString(),
                                      QFileInfo(document_->path()).completeBaseName() + '.' +
                                          document_->built()->precision + ".plan")
                                .filePath();
  const QString path = QFileDialog::getSaveFileName(window_, tr("Save Plan"), suggested,
                                                    tr("Kiln plans (*.plan);;All files (*)"));
  if (path.isEmpty()) return;
  settings.setValue("files/lastPlanDir", QFileInfo(path).absolutePath());
  try {
    document_->savePlan(path);
    status(tr("Saved %1").arg(QFileInfo(path).fileName()));
  } catch (const kiln::Error& e) {
    QMessageBox box(QMessageBox::Warning, tr("Could not save the plan"), QString::fromUtf8(e.what()), QMessageBox::Ok,
                    window_);
    box.setInformativeText(tr("Choose a folder you can write to, with room for the plan."));
    box.exec();
  }
}

void EnginePanels::openProfile(const QString& path) {
  try {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
      throw kiln::Error(kiln::ErrorCode::kIoError, "cannot open '" + path.toStdString() + "'");
    timing_->setProfile(kiln::ProfileReport::fromJson(file.readAll().toStdString()), QFileInfo(path).fileName());
    raise(timingDock_);
    makeRoomForResults(timingDock_);
    status(tr("Opened profile %1").arg(QFileInfo(path).fileName()));
    emit profileShown();
  } catch (const kiln::Error& e) {
    QMessageBox box(QMessageBox::Warning, tr("Could not open the profile"), QString::fromUtf8(e.what()), QMessageBox::Ok,
                    window_);
    box.setInformativeText(tr("Kiln Studio reads kiln-profile-1 JSON files, as written by "
                              "kiln profile --export-profile FILE."));
    box.exec();
  }
}

void EnginePanels::showHeatmap(Heatmap heatmap) {
  heatmap_ = heatmap;
  // One heatmap at a time: the other panel's box unticks without re-entering here.
  for (auto [box, kind] : {std::pair{timing_->heatmapBox(), Heatmap::kTime}, std::pair{accuracy_->heatmapBox(), Heatmap::kError},
                           std::pair{precision_->heatmapBox(), Heatmap::kPrecision}}) {
    const QSignalBlocker blocker(box);
    box->setChecked(kind == heatmap);
  }
  const kiln::views::OriginMap origins = fusion_->hasReport()
                                             ? fusion_->origins()
                                             : kiln::views::OriginMap({}, scene_->structure());
  switch (heatmap) {
    case Heatmap::kNone: scene_->setHeatmap({}, {}); break;
    case Heatmap::kTime:
      scene_->setHeatmap(tr("Layer time (share of total)"), kiln::views::layerHeatmap(origins, timing_->layerValues()));
      break;
    case Heatmap::kError:
      scene_->setHeatmap(tr("Layer error vs FP32 (relative RMS)"),
                         kiln::views::layerHeatmap(origins, accuracy_->layerValues()));
      break;
    case Heatmap::kPrecision:
      scene_->setHeatmap(precision_->heatmapTitle(), kiln::views::layerHeatmap(origins, precision_->layerValues()),
                         precision_->heatmapCategories());
      break;
  }
}

void EnginePanels::raise(QDockWidget* dock) {
  dock->show();
  dock->raise();
}

// The bottom docks start low while they hold only hints (MainWindow's default layout); the first
// results get a quarter of the window. Only once: after that the height is the user's.
void EnginePanels::makeRoomForResults(QDockWidget* shown) {
  if (madeRoomForResults_) return;
  madeRoomForResults_ = true;
  const int wanted = window_->height() / 4;
  if (shown->height() < wanted) window_->resizeDocks({shown}, {wanted}, Qt::Vertical);
}

void EnginePanels::status(const QString& message) { window_->statusBar()->showMessage(message, kStatusTimeoutMs); }

void EnginePanels::saveSettings() const {
  build_->saveSettings();
  accuracy_->saveSettings();
}

void EnginePanels::shutdown() {
  controller_->cancel();
  controller_->waitForIdle();
}
