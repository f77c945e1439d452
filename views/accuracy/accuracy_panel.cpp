#include "accuracy/accuracy_panel.h"

#include "accuracy/tensor_metrics_model.h"
#include "accuracy/tolerance_spin_box.h"
#include "common/heat_scale.h"
#include "common/value_format.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QValueAxis>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace kiln::views {
namespace {

// Relative errors below this count as exact on the heatmap's log scale.
constexpr double kSmallestShownError = 1e-7;

QTableView* metricsTable(TensorMetricsModel* model, QWidget* parent) {
  auto* sorted = new QSortFilterProxyModel(parent);
  sorted->setSourceModel(model);
  sorted->setSortRole(TensorMetricsModel::kSortRole);
  auto* table = new QTableView(parent);
  table->setModel(sorted);
  table->setSortingEnabled(true);
  table->sortByColumn(-1, Qt::AscendingOrder);  // execution order until the user sorts
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->setAlternatingRowColors(true);
  table->setWordWrap(false);
  table->verticalHeader()->hide();
  table->verticalHeader()->setDefaultSectionSize(22);
  // Numbers sized to fit; the names take what is left (and elide in the middle, where paths differ).
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->horizontalHeader()->setSectionResizeMode(TensorMetricsModel::kTensor, QHeaderView::Stretch);
  table->horizontalHeader()->setSectionResizeMode(TensorMetricsModel::kLayer, QHeaderView::Interactive);
  table->setColumnWidth(TensorMetricsModel::kLayer, 150);
  table->setTextElideMode(Qt::ElideMiddle);
  return table;
}

QDoubleSpinBox* toleranceBox(double value, const QString& tip, QWidget* parent) {
  auto* box = new ToleranceSpinBox(parent);
  box->setValue(value);
  box->setToolTip(tip);
  return box;
}

}  // namespace

AccuracyPanel::AccuracyPanel(QWidget* parent) : QWidget(parent) {
  outputs_ = new TensorMetricsModel(this);
  layers_ = new TensorMetricsModel(this);
  outputTable_ = metricsTable(outputs_, this);
  outputTable_->hideColumn(TensorMetricsModel::kLayer);
  layerTable_ = metricsTable(layers_, this);
  // Per-layer pass/fail would need every intermediate tensor kept; the error measures say enough.
  layerTable_->hideColumn(TensorMetricsModel::kFailing);
  layerTable_->hideColumn(TensorMetricsModel::kResult);

  histogram_ = new QChartView(this);
  histogram_->setRenderHint(QPainter::Antialiasing);
  histogram_->setMinimumWidth(240);
  engines_ = new EngineComparisonModel(this);
  engineTable_ = new QTableView(this);
  engineTable_->setModel(engines_);
  engineTable_->verticalHeader()->hide();
  engineTable_->verticalHeader()->setDefaultSectionSize(22);
  engineTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  engineTable_->setAlternatingRowColors(true);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(outputTable_, tr("Outputs"));
  tabs_->addTab(layerTable_, tr("Per layer"));
  tabs_->addTab(engineTable_, tr("Engines side by side"));
  results_ = new QSplitter(Qt::Horizontal, this);
  results_->addWidget(tabs_);
  results_->addWidget(histogram_);
  results_->setStretchFactor(0, 2);  // the table's columns need the room more than the bars
  results_->setStretchFactor(1, 1);
  results_->hide();

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(createControls());
  layout->addWidget(results_, 1);
  layout->addStretch();  // keeps the controls at the top while the results are hidden

  connect(outputTable_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &AccuracyPanel::updateHistogram);
  updateVerdict();
  updateHistogram();
}

QWidget* AccuracyPanel::createControls() {
  auto* controls = new QWidget(this);
  auto* row = new QHBoxLayout(controls);
  row->setContentsMargins(0, 0, 0, 0);
  verdict_ = new QLabel(controls);
  verdict_->setTextFormat(Qt::RichText);
  verdict_->setMinimumWidth(260);
  atol_ = toleranceBox(1e-3, tr("Absolute tolerance: |candidate − reference| ≤ atol + rtol·|reference|"), controls);
  rtol_ = toleranceBox(1e-3, tr("Relative tolerance: |candidate − reference| ≤ atol + rtol·|reference|"), controls);
  inputKind_ = new QComboBox(controls);
  inputKind_->addItem(tr("Random inputs"), int(InputSource::Kind::kRandom));
  inputKind_->addItem(tr("Input folder"), int(InputSource::Kind::kFolder));
  seed_ = new QSpinBox(controls);
  seed_->setRange(0, 1'000'000);
  seed_->setValue(1);
  seed_->setPrefix(tr("seed "));
  folder_ = new QLineEdit(controls);
  folder_->setPlaceholderText(tr("<input>.npy / .pb files"));
  auto* browse = new QToolButton(controls);
  browse->setText(QStringLiteral("…"));
  connect(browse, &QToolButton::clicked, this, [this] {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Input Data"), folder_->text());
    if (folder.isEmpty()) return;
    folder_->setText(folder);
    inputKind_->setCurrentIndex(1);
  });
  auto updateInputs = [this, browse] {
    const bool folder = inputKind_->currentData().toInt() == int(InputSource::Kind::kFolder);
    seed_->setVisible(!folder);
    folder_->setVisible(folder);
    browse->setVisible(folder);
  };
  connect(inputKind_, &QComboBox::currentIndexChanged, this, updateInputs);
  updateInputs();
  compareButton_ = new QPushButton(tr("Compare with FP32"), controls);
  compareButton_->setEnabled(false);
  compareEnginesButton_ = new QPushButton(tr("Compare All Engines"), controls);
  compareEnginesButton_->setEnabled(false);
  heatmap_ = new QCheckBox(tr("Colour graph by error"), controls);
  heatmap_->setEnabled(false);

  row->addWidget(verdict_, 1);
  row->addWidget(heatmap_);
  row->addWidget(new QLabel(tr("atol"), controls));
  row->addWidget(atol_);
  row->addWidget(new QLabel(tr("rtol"), controls));
  row->addWidget(rtol_);
  row->addWidget(inputKind_);
  row->addWidget(seed_);
  row->addWidget(folder_);
  row->addWidget(browse);
  row->addWidget(compareButton_);
  row->addWidget(compareEnginesButton_);

  connect(atol_, &QDoubleSpinBox::valueChanged, this, &AccuracyPanel::remeasure);
  connect(rtol_, &QDoubleSpinBox::valueChanged, this, &AccuracyPanel::remeasure);
  connect(compareButton_, &QPushButton::clicked, this, &AccuracyPanel::compareRequested);
  connect(compareEnginesButton_, &QPushButton::clicked, this, &AccuracyPanel::compareEnginesRequested);
  connect(heatmap_, &QCheckBox::toggled, this, &AccuracyPanel::heatmapToggled);
  return controls;
}

Tolerance AccuracyPanel::tolerance() const { return {atol_->value(), rtol_->value()}; }

void AccuracyPanel::setTolerance(const Tolerance& tolerance) {
  atol_->setValue(tolerance.atol);
  rtol_->setValue(tolerance.rtol);
}

InputSource AccuracyPanel::inputSource() const {
  InputSource source;
  source.kind = InputSource::Kind(inputKind_->currentData().toInt());
  source.seed = uint64_t(seed_->value());
  source.folder = folder_->text();
  return source;
}

void AccuracyPanel::setRun(AccuracyRun run) {
  run_ = std::move(run);
  hasRun_ = true;
  layers_->setMetrics(run_.report.layers);
  heatmap_->setEnabled(!run_.report.layers.empty());
  results_->show();
  remeasure();
  if (heatmap_->isChecked()) emit heatmapToggled(true);
}

void AccuracyPanel::clear() {
  run_ = {};
  hasRun_ = false;
  outputs_->setMetrics({});
  layers_->setMetrics({});
  engines_->setEngines({});
  heatmap_->setChecked(false);
  heatmap_->setEnabled(false);
  results_->hide();
  updateVerdict();
  updateHistogram();
}

// Pass/fail depends on the tolerances; the outputs are kept, so re-measuring is cheap.
void AccuracyPanel::remeasure() {
  if (!hasRun_) return updateVerdict();
  std::vector<TensorMetrics> metrics;
  for (const TensorMetrics& measured : run_.report.outputs) {
    const auto reference = run_.reference.find(measured.name);
    const auto candidate = run_.candidate.find(measured.name);
    if (reference == run_.reference.end() || candidate == run_.candidate.end()) {
      metrics.push_back(measured);  // not comparable (kept with its reason)
      continue;
    }
    metrics.push_back(measureTensor(measured.name, reference->second, candidate->second, tolerance()));
  }
  outputs_->setMetrics(std::move(metrics));
  updateVerdict();
  updateHistogram();
}

bool AccuracyPanel::passes() const {
  const auto& metrics = outputs_->metrics();
  return hasRun_ && std::all_of(metrics.begin(), metrics.end(), [](const TensorMetrics& m) { return m.pass; });
}

void AccuracyPanel::updateVerdict() {
  if (!hasRun_) {
    verdict_->setText(tr("Compare the built engine with the FP32 reference on the same inputs."));
    return;
  }
  int failing = 0;
  for (const auto& m : outputs_->metrics()) failing += !m.pass;
  const QString tolerances =
      QStringLiteral("atol %1, rtol %2").arg(formatCompactNumber(atol_->value()), formatCompactNumber(rtol_->value()));
  verdict_->setText(passes() ? tr("<span style='color:#15803D; font-weight:600'>✔ PASS</span> %1 vs FP32 · %2 "
                                  "output(s) within %3")
                                   .arg(run_.candidateLabel.toHtmlEscaped())
                                   .arg(outputs_->rowCount())
                                   .arg(tolerances)
                             : tr("<span style='color:#B91C1C; font-weight:600'>✘ FAIL</span> %1 vs FP32 · %2 of %3 "
                                  "output(s) outside %4")
                                   .arg(run_.candidateLabel.toHtmlEscaped())
                                   .arg(failing)
                                   .arg(outputs_->rowCount())
                                   .arg(tolerances));
}

std::vector<int64_t> AccuracyPanel::shownHistogram() const {
  const QModelIndexList selected = outputTable_->selectionModel()->selectedRows();
  std::vector<int64_t> counts;
  auto add = [&counts](const TensorMetrics& m) {
    counts.resize(std::max(counts.size(), m.errorHistogram.size()), 0);
    for (size_t i = 0; i < m.errorHistogram.size(); ++i) counts[i] += m.errorHistogram[i];
  };
  if (!selected.isEmpty()) {
    const auto* sorted = static_cast<const QSortFilterProxyModel*>(outputTable_->model());
    add(outputs_->metrics()[size_t(sorted->mapToSource(selected.front()).row())]);
  } else {
    for (const auto& m : outputs_->metrics()) add(m);
  }
  return counts;
}

void AccuracyPanel::updateHistogram() {
  auto* chart = new QChart;
  chart->legend()->hide();
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->setBackgroundRoundness(0);
  const std::vector<int64_t> counts = shownHistogram();
  if (!counts.empty()) {
    chart->setTitle(tr("|error| per decade (elements)"));
    auto* bars = new QBarSet(tr("elements"));
    bars->setColor(heatColor(0.55));
    bars->setBorderColor(heatColor(0.8));
    QStringList decades;
    int64_t largest = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      *bars << double(counts[i]);
      largest = std::max(largest, counts[i]);
      // Buckets: [<1e-7, 1e-7..1e-6, ..., 1e-1..1, >=1].
      decades << (i == 0 ? QStringLiteral("<1e-7") : i + 1 == counts.size() ? QStringLiteral("≥1")
                                                                             : QStringLiteral("1e-%1").arg(8 - int(i)));
    }
    auto* series = new QBarSeries;
    series->append(bars);
    series->setBarWidth(0.85);
    chart->addSeries(series);
    auto* axisX = new QBarCategoryAxis;
    axisX->append(decades);
    QFont small = axisX->labelsFont();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    axisX->setLabelsFont(small);
    chart->addAxis(axisX, Qt::AlignBottom);
    series->attachAxis(axisX);
    auto* axisY = new QValueAxis;
    axisY->setRange(0, double(std::max<int64_t>(largest, 1)));
    axisY->setLabelFormat(QStringLiteral("%.0f"));
    axisY->setLabelsFont(small);
    chart->addAxis(axisY, Qt::AlignLeft);
    series->attachAxis(axisY);
    axisY->applyNiceNumbers();
  }
  QChart* old = histogram_->chart();
  histogram_->setChart(chart);
  delete old;
}

std::vector<LayerValue> AccuracyPanel::layerValues() const {
  std::map<std::string, double> worst;  // an engine layer may produce several tensors
  for (const auto& m : run_.report.layers)
    if (!m.layer.empty()) worst[m.layer] = std::max(worst[m.layer], relativeRmsError(m));
  // Decades above a floor one decade under the most accurate layer: fp16 errors all sit near 1e-4,
  // and a fixed floor (1e-7) would paint every layer the same deep red.
  double smallest = std::numeric_limits<double>::infinity();
  for (const auto& [layer, error] : worst) smallest = std::min(smallest, std::max(error, kSmallestShownError));
  const double floor = smallest / 10;
  std::vector<LayerValue> values;
  for (const auto& [layer, error] : worst)
    values.push_back({layer, std::log10(std::max(error, kSmallestShownError) / floor), formatError(error, 0)});
  return values;
}

void AccuracyPanel::setCanCompare(bool canCompare, const QString& why) {
  compareButton_->setEnabled(canCompare);
  compareButton_->setToolTip(canCompare ? tr("Run the FP32 reference and the engine on the same inputs") : why);
}

void AccuracyPanel::setRunning(bool running) {
  compareButton_->setText(running ? tr("Comparing…") : tr("Compare with FP32"));
  if (running) compareButton_->setEnabled(false);
  if (running) compareEnginesButton_->setEnabled(false);
}

void AccuracyPanel::setEngineComparison(std::vector<EngineColumn> engines) {
  engines_->setEngines(std::move(engines));
  results_->show();
  tabs_->setCurrentWidget(engineTable_);
}

void AccuracyPanel::setCanCompareEngines(bool canCompare, const QString& why) {
  compareEnginesButton_->setEnabled(canCompare);
  compareEnginesButton_->setToolTip(canCompare ? tr("Run the FP32 reference and every engine built from this model "
                                                    "(the latest of each precision) on the same inputs, side by side")
                                               : why);
}

void AccuracyPanel::saveSettings() const {
  QSettings settings;
  settings.setValue(QStringLiteral("accuracy/atol"), atol_->value());
  settings.setValue(QStringLiteral("accuracy/rtol"), rtol_->value());
  settings.setValue(QStringLiteral("accuracy/seed"), seed_->value());
  settings.setValue(QStringLiteral("accuracy/inputKind"), inputKind_->currentIndex());
  settings.setValue(QStringLiteral("accuracy/folder"), folder_->text());
}

void AccuracyPanel::restoreSettings() {
  QSettings settings;
  atol_->setValue(settings.value(QStringLiteral("accuracy/atol"), 1e-3).toDouble());
  rtol_->setValue(settings.value(QStringLiteral("accuracy/rtol"), 1e-3).toDouble());
  seed_->setValue(settings.value(QStringLiteral("accuracy/seed"), 1).toInt());
  inputKind_->setCurrentIndex(settings.value(QStringLiteral("accuracy/inputKind"), 0).toInt());
  folder_->setText(settings.value(QStringLiteral("accuracy/folder")).toString());
}

}  // namespace kiln::views
