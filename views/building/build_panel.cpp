#include "building/build_panel.h"

#include "building/calibration_settings.h"
#include "building/profile_range_model.h"
#include "common/cache_file_field.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <kiln/builder.h>
#include <kiln/precision_support.h>

#include <algorithm>

namespace kiln::views {
namespace {

constexpr int kMaxLogLines = 5000;

QString precisionName(Precision precision) { return QString::fromLatin1(toString(precision)); }

// Spells ranges for QSettings: "1,3,64,64|4,3,64,64|8,3,64,64".
QString encodeRange(const ShapeRange& range) {
  auto join = [](const std::vector<int64_t>& dims) {
    QStringList parts;
    for (int64_t d : dims) parts << QString::number(d);
    return parts.join(',');
  };
  return join(range.min) + '|' + join(range.opt) + '|' + join(range.max);
}

ShapeRange decodeRange(const QString& text) {
  ShapeRange range;
  const QStringList points = text.split('|');
  if (points.size() != 3) return range;
  std::vector<int64_t>* targets[] = {&range.min, &range.opt, &range.max};
  for (int p = 0; p < 3; ++p)
    for (const QString& part : points[p].split(',', Qt::SkipEmptyParts)) targets[p]->push_back(part.toLongLong());
  return range;
}

}  // namespace

BuildPanel::BuildPanel(QWidget* parent) : QWidget(parent) {
  // The settings scroll instead of widening or lengthening the dock, so the graph keeps the room;
  // the Build button, progress and log stay in view below them.
  auto* settings = new QWidget;
  calibration_ = new CalibrationSettings(settings);  // first: the precision checkboxes update it
  auto* layout = new QVBoxLayout(settings);
  layout->setContentsMargins(6, 6, 6, 0);
  layout->addWidget(createTargetGroup(settings));
  layout->addWidget(createShapesGroup(settings));  // above the tactic settings: a dynamic model needs it first
  layout->addWidget(createTacticsGroup(settings));
  layout->addWidget(calibration_);
  layout->addStretch();
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(settings);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 6);
  outer->addWidget(scroll, 1);
  outer->addWidget(createRunGroup(this));
  connect(backend_, &QComboBox::currentIndexChanged, this, &BuildPanel::updateBackendOptions);
  connect(calibration_, &CalibrationSettings::changed, this, &BuildPanel::updateValidity);
  connect(precisionBox(Precision::kINT8), &QCheckBox::toggled, this, &BuildPanel::updatePrecisionChoices);
  connect(precisionBox(Precision::kFP8), &QCheckBox::toggled, this, &BuildPanel::updatePrecisionChoices);
  updateBackendOptions();
  updateValidity();
}

QWidget* BuildPanel::createTargetGroup(QWidget* parent) {
  auto* group = new QGroupBox(tr("Target"), parent);
  auto* form = new QFormLayout(group);
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);  // a narrow dock puts the field under its label
  backend_ = new QComboBox(group);
  backend_->addItem(tr("CPU"), int(BackendKind::kCpu));
  // CUDA where this machine has a GPU and Kiln's CUDA backend loads; otherwise the reason, shown.
  const QString cudaProblem = QString::fromStdString(backendUnavailableReason(BackendKind::kCuda));
  backend_->addItem(cudaProblem.isEmpty() ? tr("CUDA") : tr("CUDA (not available)"), int(BackendKind::kCuda));
  auto* items = qobject_cast<QStandardItemModel*>(backend_->model());
  items->item(1)->setEnabled(cudaProblem.isEmpty());
  items->item(1)->setToolTip(cudaProblem.isEmpty() ? tr("Layers on the GPU; those it cannot run fall back to the CPU")
                                                   : cudaProblem);
  backend_->setToolTip(tr("CPU: Kiln's reference backend.\nCUDA: %1")
                           .arg(cudaProblem.isEmpty() ? tr("NVIDIA GPU") : cudaProblem));
  // Sized by the selected item, not the longest ("CUDA (not available)"), so the row fits a narrow dock.
  backend_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  backend_->setMinimumContentsLength(6);
  form->addRow(tr("Backend"), backend_);

  // Three to a row: five in one line would set the dock's minimum width.
  constexpr int kPrecisionsPerRow = 3;
  auto* precisionGrid = new QGridLayout;
  const std::pair<Precision, QString> choices[] = {
      {Precision::kFP32, tr("Always allowed: the fallback for layers that need full precision")},
      {Precision::kFP16, tr("Keep activations in fp16 between layers (computed in fp32 inside a layer)")},
      {Precision::kBF16, tr("Keep activations in bf16 between layers (computed in fp32 inside a layer)")},
      {Precision::kINT8, tr("Quantize Conv / MatMul / Gemm layers to int8 by post-training calibration (the INT8 "
                            "calibration settings below)")},
      {Precision::kFP8, tr("Quantize Conv / MatMul / Gemm layers to fp8 e4m3 by the same calibration (where the "
                           "backend runs fp8 layers)")}};
  for (const auto& [precision, tip] : choices) {
    auto* box = new QCheckBox(precisionName(precision), group);
    box->setToolTip(tip);
    box->setChecked(precision == Precision::kFP32);
    box->setEnabled(precision != Precision::kFP32);
    const int index = int(precisions_.size());
    precisionGrid->addWidget(box, index / kPrecisionsPerRow, index % kPrecisionsPerRow);
    precisions_.emplace_back(precision, box);
  }
  precisionGrid->setColumnStretch(kPrecisionsPerRow, 1);
  form->addRow(tr("Precisions"), precisionGrid);
  quantizeWhereFaster_ = new QCheckBox(tr("Quantize only where faster"), group);
  quantizeWhereFaster_->setToolTip(
      tr("INT8 / FP8 as permissions (TensorRT's choice): each layer is timed quantized "
         "and in the float precision and stays float where that is faster"));
  form->addRow(QString(), quantizeWhereFaster_);

  workspaceMiB_ = new QSpinBox(group);
  workspaceMiB_->setRange(1, 1 << 20);
  workspaceMiB_->setValue(1024);
  workspaceMiB_->setSuffix(tr(" MiB"));
  workspaceMiB_->setToolTip(tr("Scratch memory a layer's tactic may use"));
  form->addRow(tr("Workspace"), workspaceMiB_);

  cudaGraphs_ = new QCheckBox(tr("Replay as a CUDA graph"), group);
  cudaGraphs_->setToolTip(tr("Profile the engine's launches captured once and replayed as a CUDA graph (CUDA "
                             "backend; an engine that synchronises inside cannot be captured)"));
  form->addRow(tr("Profiling"), cudaGraphs_);
  return group;
}

QWidget* BuildPanel::createTacticsGroup(QWidget* parent) {
  auto* group = new QGroupBox(tr("Tactic search"), parent);
  auto* form = new QFormLayout(group);
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);
  optimizationLevel_ = new QSpinBox(group);
  optimizationLevel_->setRange(0, 5);
  optimizationLevel_->setValue(3);
  optimizationLevel_->setToolTip(
      tr("How hard the builder searches (TensorRT's builder optimization level):\n"
         "0: no graph passes; each layer takes its backend's first tactic, untimed\n"
         "1: the basic passes (fold, remove no-ops); first tactics, untimed\n"
         "2: BatchNorm folding and epilogue fusion; the first two tactics timed\n"
         "3: every pass; every tactic timed (default)\n"
         "4, 5: also two and four times as many cuBLASLt / cuDNN candidates"));
  form->addRow(tr("Optimization level"), optimizationLevel_);

  // Two to a row, named as --tactic-sources names them; the CUDA ones only matter on CUDA.
  const std::pair<QString, QString> sources[] = {{QStringLiteral("cudnn"), tr("cuDNN")},
                                                 {QStringLiteral("cublaslt"), tr("cuBLASLt")},
                                                 {QStringLiteral("cuda"), tr("Kiln CUDA")},
                                                 {QStringLiteral("nvrtc"), tr("NVRTC")},
                                                 {QStringLiteral("cpu"), tr("CPU")}};
  auto* sourceGrid = new QGridLayout;
  for (const auto& [source, label] : sources) {
    auto* box = new QCheckBox(label, group);
    box->setChecked(true);
    box->setToolTip(tr("Let the builder choose tactics whose id starts with \"%1.\" (unchecked: "
                       "--tactic-sources -%1)")
                        .arg(source));
    const int index = int(tacticSources_.size());
    sourceGrid->addWidget(box, index / 2, index % 2);
    tacticSources_.emplace_back(source, box);
  }
  sourceGrid->setColumnStretch(2, 1);
  form->addRow(tr("Tactic sources"), sourceGrid);

  timingCache_ = new QLineEdit(group);
  timingCache_->setObjectName(QStringLiteral("timingCache"));
  timingCache_->setToolTip(tr("A timing cache file keeps tactic timings between builds; with none, every build "
                              "times its tactics again"));
  form->addRow(tr("Timing cache"), cacheFileRow(timingCache_, tr("Timing Cache"),
                                                tr("Timing caches (*.cache);;All files (*)"),
                                                tr("Choose a timing cache file (created when it does not exist)")));
  return group;
}

// The CUDA-only settings follow the backend: CUDA graphs and the CUDA tactic sources.
void BuildPanel::updateBackendOptions() {
  const bool cuda = BackendKind(backend_->currentData().toInt()) == BackendKind::kCuda;
  cudaGraphs_->setEnabled(cuda);
  for (const auto& [source, box] : tacticSources_) box->setEnabled(cuda || source == QLatin1String("cpu"));
  updatePrecisionChoices();
}

// FP8 is offered where the backend runs some layer of the model as an fp8 quantized layer;
// otherwise it is shown disabled with the backend's reason. The calibration settings apply to
// INT8 and FP8 builds.
void BuildPanel::updatePrecisionChoices() {
  QCheckBox* fp8 = precisionBox(Precision::kFP8);
  const QString refusal =
      network_ ? QString::fromStdString(precisionUnsupportedReason(
                     *network_, BackendKind(backend_->currentData().toInt()), Precision::kFP8))
               : QString();
  fp8->setEnabled(network_ && refusal.isEmpty());
  if (!fp8->isEnabled()) fp8->setChecked(false);
  fp8->setToolTip(refusal.isEmpty() ? tr("Quantize Conv / MatMul / Gemm layers to fp8 e4m3 by the same calibration")
                                    : tr("Not available: %1").arg(refusal));
  calibration_->setEnabled(quantizes());
  quantizeWhereFaster_->setEnabled(quantizes());
  updateValidity();
}

QWidget* BuildPanel::createShapesGroup(QWidget* parent) {
  auto* group = new QGroupBox(tr("Optimization profile"), parent);
  auto* layout = new QVBoxLayout(group);
  profileModel_ = new ProfileRangeModel(this);
  profileTable_ = new QTableView(group);
  profileTable_->setModel(profileModel_);
  profileTable_->verticalHeader()->hide();
  profileTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  profileTable_->horizontalHeader()->setSectionResizeMode(ProfileRangeModel::kInput, QHeaderView::ResizeToContents);
  profileTable_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                                 QAbstractItemView::AnyKeyPressed);
  profileTable_->verticalHeader()->setDefaultSectionSize(22);
  layout->addWidget(profileTable_);
  profileErrors_ = new QLabel(group);
  profileErrors_->setWordWrap(true);
  profileErrors_->setStyleSheet(QStringLiteral("color: #B91C1C;"));
  profileErrors_->hide();
  layout->addWidget(profileErrors_);
  connect(profileModel_, &ProfileRangeModel::validityChanged, this, &BuildPanel::updateValidity);
  connect(profileModel_, &QAbstractItemModel::dataChanged, this, &BuildPanel::updateValidity);
  return group;
}

QWidget* BuildPanel::createRunGroup(QWidget* parent) {
  auto* group = new QWidget(parent);
  auto* layout = new QVBoxLayout(group);
  layout->setContentsMargins(6, 4, 6, 0);
  auto* buttons = new QHBoxLayout;
  buildButton_ = new QPushButton(tr("Build Engine"), group);
  buildButton_->setDefault(true);
  buildButton_->setToolTip(tr("Build an engine from the open model (Ctrl+B)"));
  cancelButton_ = new QPushButton(tr("Cancel"), group);
  cancelButton_->setEnabled(false);
  buttons->addWidget(buildButton_, 1);
  buttons->addWidget(cancelButton_);
  layout->addLayout(buttons);
  progress_ = new QProgressBar(group);
  progress_->setRange(0, 100);
  progress_->setValue(0);
  layout->addWidget(progress_);
  phase_ = new QLabel(tr("Open a model to build an engine."), group);
  phase_->setWordWrap(true);
  layout->addWidget(phase_);
  log_ = new QPlainTextEdit(group);
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(kMaxLogLines);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  log_->setPlaceholderText(tr("Build log"));
  // A fixed few lines: the settings above get the rest of the dock's height, and scroll.
  log_->setFixedHeight(7 * log_->fontMetrics().lineSpacing());
  layout->addWidget(log_);
  connect(buildButton_, &QPushButton::clicked, this, [this] {
    if (canBuild()) emit buildRequested();
  });
  connect(cancelButton_, &QPushButton::clicked, this, &BuildPanel::cancelRequested);
  return group;
}

void BuildPanel::setNetwork(const Network* network) {
  network_ = network;
  profileModel_->setNetwork(network);
  restoreSettings();  // earlier ranges for inputs of the same name and rank
  updatePrecisionChoices();
  fitProfileTable();
  phase_->setText(network ? tr("Ready to build.") : tr("Open a model to build an engine."));
  updateValidity();
}

// Tall enough for every dimension row (up to six, then it scrolls): the build log below stretches
// and would otherwise squeeze the table to a clipped row or two.
void BuildPanel::fitProfileTable() {
  constexpr int kMaxVisibleRows = 6;
  const int rows = std::clamp(profileModel_->rowCount(), 1, kMaxVisibleRows);
  profileTable_->setFixedHeight(profileTable_->horizontalHeader()->sizeHint().height() +
                                rows * profileTable_->verticalHeader()->defaultSectionSize() +
                                2 * profileTable_->frameWidth());
}

void BuildPanel::updateValidity() {
  QStringList errors = profileModel_->errors();
  profileErrors_->setText(errors.join('\n'));
  profileErrors_->setVisible(!errors.isEmpty());
  // The calibration group shows its own problem; the Build button's tip names every one.
  if (quantizes() && !calibration_->problem().isEmpty())
    errors << calibration_->problem();
  const bool can = canBuild();
  buildButton_->setEnabled(can);
  buildButton_->setToolTip(!errors.isEmpty()  ? tr("Fix these first:\n%1").arg(errors.join('\n'))
                           : !network_        ? tr("Open a model first")
                           : building_        ? tr("A build is running")
                                              : tr("Build an engine from the open model (Ctrl+B)"));
  emit canBuildChanged(can);
}

bool BuildPanel::canBuild() const {
  const bool calibrated = !quantizes() || calibration_->problem().isEmpty();
  return network_ && !building_ && profileModel_->isValid() && calibrated;
}

bool BuildPanel::quantizes() const {
  return precisionBox(Precision::kINT8)->isChecked() || precisionBox(Precision::kFP8)->isChecked();
}

QCheckBox* BuildPanel::precisionBox(Precision precision) const {
  for (const auto& [p, box] : precisions_)
    if (p == precision) return box;
  return nullptr;
}

void BuildPanel::setPrecisionAllowed(Precision precision, bool allowed) {
  if (QCheckBox* box = precisionBox(precision); box && box->isEnabled()) box->setChecked(allowed);
}

QCheckBox* BuildPanel::tacticSourceBox(const QString& source) const {
  for (const auto& [name, box] : tacticSources_)
    if (name == source) return box;
  return nullptr;
}

BuilderConfig BuildPanel::config() const {
  BuilderConfig config;
  config.backend = BackendKind(backend_->currentData().toInt());
  config.allowFP16 = precisionBox(Precision::kFP16)->isChecked();
  config.allowBF16 = precisionBox(Precision::kBF16)->isChecked();
  config.allowINT8 = precisionBox(Precision::kINT8)->isChecked();
  config.allowFP8 = precisionBox(Precision::kFP8)->isEnabled() && precisionBox(Precision::kFP8)->isChecked();
  if (config.allowINT8) config.calibration = calibration_->config();
  config.quantizeWhereFaster = quantizeWhereFaster_->isEnabled() && quantizeWhereFaster_->isChecked();
  config.optimizationLevel = optimizationLevel_->value();
  config.workspaceBytes = uint64_t(workspaceMiB_->value()) << 20;
  config.timingCachePath = timingCache_->text().trimmed().toStdString();
  for (const auto& [source, box] : tacticSources_)
    if (!box->isChecked()) config.disabledTacticSources.push_back(source.toStdString());
  config.cudaGraphs = cudaGraphs_->isEnabled() && cudaGraphs_->isChecked();
  if (profileModel_->hasDynamicDimensions()) config.profiles.push_back(profileModel_->profile());
  return config;
}

QString BuildPanel::precisionLabel() const {
  const BuilderConfig c = config();
  QStringList parts;
  if (c.allowINT8) parts << QStringLiteral("int8");
  if (c.allowFP8) parts << QStringLiteral("fp8");
  if (parts.isEmpty() || c.storagePrecision() != Precision::kFP32)
    parts << QString::fromLatin1(toString(c.storagePrecision()));
  return parts.join(QLatin1Char('+'));
}

QString BuildPanel::logText() const { return log_->toPlainText(); }

void BuildPanel::buildStarted() {
  building_ = true;
  log_->clear();
  progress_->setValue(0);
  phase_->setText(tr("Starting…"));
  cancelButton_->setEnabled(true);
  updateValidity();
}

void BuildPanel::showProgress(double fraction, const QString& phase, const QString& layer, const QString& tactic) {
  progress_->setValue(int(fraction * 100));
  QStringList parts{phase};
  if (!layer.isEmpty()) parts << layer;
  if (!tactic.isEmpty()) parts << tactic;
  phase_->setText(parts.join(QStringLiteral(" · ")));
}

QString BuildPanel::phaseText() const { return phase_->text(); }

void BuildPanel::appendLog(const QString& line) { log_->appendPlainText(line); }

void BuildPanel::finishRun(const QString& status, const QString& logLine) {
  building_ = false;
  cancelButton_->setEnabled(false);
  phase_->setText(status);
  appendLog(logLine);
  updateValidity();
}

void BuildPanel::buildFinished(const QString& summary) {
  progress_->setValue(100);
  finishRun(summary, tr("done: %1").arg(summary));
}

void BuildPanel::buildFailed(const QString& message) {
  finishRun(tr("Build failed."), tr("error: %1").arg(message));
}

void BuildPanel::buildCancelled() {
  progress_->setValue(0);
  finishRun(tr("Build cancelled; nothing was written."), tr("cancelled"));
}

void BuildPanel::saveSettings() const {
  QSettings settings;
  settings.beginGroup(QStringLiteral("build"));
  QStringList precisions;
  for (const auto& [precision, box] : precisions_)
    if (box->isChecked()) precisions << precisionName(precision);
  settings.setValue(QStringLiteral("precisions"), precisions);
  settings.setValue(QStringLiteral("optimizationLevel"), optimizationLevel_->value());
  settings.setValue(QStringLiteral("workspaceMiB"), workspaceMiB_->value());
  settings.setValue(QStringLiteral("timingCache"), timingCache_->text());
  QStringList disabledSources;
  for (const auto& [source, box] : tacticSources_)
    if (!box->isChecked()) disabledSources << source;
  settings.setValue(QStringLiteral("disabledTacticSources"), disabledSources);
  settings.setValue(QStringLiteral("cudaGraphs"), cudaGraphs_->isChecked());
  calibration_->saveSettings();
  QVariantMap ranges = settings.value(QStringLiteral("profile")).toMap();
  for (const auto& [input, range] : profileModel_->profile().inputs)
    ranges[QString::fromStdString(input)] = encodeRange(range);
  settings.setValue(QStringLiteral("profile"), ranges);
}

void BuildPanel::restoreSettings() {
  QSettings settings;
  settings.beginGroup(QStringLiteral("build"));
  if (settings.contains(QStringLiteral("precisions"))) {
    const QStringList precisions = settings.value(QStringLiteral("precisions")).toStringList();
    for (const auto& [precision, box] : precisions_)
      if (box->isEnabled()) box->setChecked(precisions.contains(precisionName(precision)));
  }
  optimizationLevel_->setValue(settings.value(QStringLiteral("optimizationLevel"), 3).toInt());
  workspaceMiB_->setValue(settings.value(QStringLiteral("workspaceMiB"), 1024).toInt());
  timingCache_->setText(settings.value(QStringLiteral("timingCache")).toString());
  const QStringList disabledSources = settings.value(QStringLiteral("disabledTacticSources")).toStringList();
  for (const auto& [source, box] : tacticSources_) box->setChecked(!disabledSources.contains(source));
  cudaGraphs_->setChecked(settings.value(QStringLiteral("cudaGraphs"), false).toBool());
  calibration_->restoreSettings();
  std::map<std::string, ShapeRange> ranges;
  const QVariantMap stored = settings.value(QStringLiteral("profile")).toMap();
  for (auto it = stored.begin(); it != stored.end(); ++it) ranges[it.key().toStdString()] = decodeRange(it.value().toString());
  profileModel_->applyRanges(ranges);
}

}  // namespace kiln::views
