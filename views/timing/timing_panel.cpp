#include "timing/timing_panel.h"

#include "common/heat_scale.h"
#include "common/value_format.h"
#include "timing/layer_timing_model.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>

namespace kiln::views {
namespace {

constexpr int kMaxChartLabel = 30;
constexpr int kChartChrome = 80;  // title, value axis and margins
constexpr int kMinBarPitch = 16;  // below this the axis hides the names behind "..."

QString elided(const std::string& name) {
  const QString text = QString::fromStdString(name);
  return text.size() <= kMaxChartLabel ? text : QStringLiteral("…") + text.right(kMaxChartLabel - 1);
}

}  // namespace

TimingPanel::TimingPanel(QWidget* parent) : QWidget(parent) {
  model_ = new LayerTimingModel(this);
  sorted_ = new QSortFilterProxyModel(this);
  sorted_->setSourceModel(model_);
  sorted_->setSortRole(LayerTimingModel::kSortRole);

  summary_ = new QLabel(tr("Profile the built engine, or open a kiln-profile-1 JSON file."), this);
  summary_->setTextFormat(Qt::RichText);
  summary_->setWordWrap(true);
  iterations_ = new QSpinBox(this);
  iterations_->setRange(1, 10000);
  iterations_->setValue(20);
  iterations_->setPrefix(tr("runs: "));
  iterations_->setToolTip(tr("Timed runs; each layer's median over them is shown"));
  profileButton_ = new QPushButton(tr("Profile Engine"), this);
  profileButton_->setEnabled(false);
  loadButton_ = new QPushButton(tr("Open Profile…"), this);
  loadButton_->setToolTip(tr("Open a kiln-profile-1 JSON file (kiln profile --export-profile)"));
  heatmap_ = new QCheckBox(tr("Colour graph by time"), this);
  heatmap_->setEnabled(false);
  auto* controls = new QHBoxLayout;
  controls->addWidget(summary_, 1);
  controls->addWidget(heatmap_);
  controls->addWidget(iterations_);
  controls->addWidget(profileButton_);
  controls->addWidget(loadButton_);

  table_ = new QTableView(this);
  table_->setModel(sorted_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(LayerTimingModel::kMedian, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(22);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->setColumnWidth(LayerTimingModel::kLayer, 190);
  table_->setColumnWidth(LayerTimingModel::kType, 120);
  table_->setColumnWidth(LayerTimingModel::kTactic, 170);
  table_->setColumnWidth(LayerTimingModel::kPrecision, 70);
  table_->horizontalHeader()->setStretchLastSection(true);

  chart_ = new QChartView(this);
  chart_->setRenderHint(QPainter::Antialiasing);
  chart_->setMinimumWidth(320);

  results_ = new QSplitter(Qt::Horizontal, this);
  results_->addWidget(table_);
  results_->addWidget(chart_);
  results_->setStretchFactor(0, 3);
  results_->setStretchFactor(1, 2);
  results_->hide();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(controls);
  layout->addWidget(results_, 1);
  layout->addStretch();  // keeps the controls at the top while the results are hidden

  connect(profileButton_, &QPushButton::clicked, this, [this] { emit profileRequested(iterations_->value()); });
  connect(loadButton_, &QPushButton::clicked, this, &TimingPanel::loadRequested);
  connect(heatmap_, &QCheckBox::toggled, this, &TimingPanel::heatmapToggled);
  updateChart();
}

void TimingPanel::setProfile(const ProfileReport& report, const QString& source) {
  report_ = report;
  hasProfile_ = true;
  model_->setLayers(report_.layers);
  heatmap_->setEnabled(true);
  results_->show();
  summary_->setText(tr("<b>%1 ms</b> per run (median of %2) · %3 layers · %4 · %5 · inputs %6")
                        .arg(report_.totalMedianMs, 0, 'f', 3)
                        .arg(report_.iterations)
                        .arg(report_.layers.size())
                        .arg(QString::fromStdString(report_.plan.deviceName.empty() ? report_.plan.backend
                                                                                    : report_.plan.deviceName))
                        .arg(source.toHtmlEscaped(), formatShapeList(report_.inputShapes).toHtmlEscaped()));
  updateChart();
  if (heatmap_->isChecked()) emit heatmapToggled(true);  // recolour with the new timings
}

void TimingPanel::clear() {
  report_ = {};
  hasProfile_ = false;
  model_->setLayers({});
  heatmap_->setChecked(false);
  heatmap_->setEnabled(false);
  results_->hide();
  summary_->setText(tr("Profile the built engine, or open a kiln-profile-1 JSON file."));
  updateChart();
}

std::vector<LayerValue> TimingPanel::layerValues() const {
  std::vector<LayerValue> values;
  for (const auto& layer : report_.layers)
    values.push_back({layer.name, layer.percent, QStringLiteral("%1%").arg(layer.percent, 0, 'f', layer.percent < 10 ? 1 : 0)});
  return values;
}

void TimingPanel::setCanProfile(bool canProfile, const QString& why) {
  profileButton_->setEnabled(canProfile);
  profileButton_->setToolTip(canProfile ? tr("Run the engine on random inputs and time every layer") : why);
}

void TimingPanel::setRunning(bool running) {
  profileButton_->setText(running ? tr("Profiling…") : tr("Profile Engine"));
  if (running) profileButton_->setEnabled(false);
}

int TimingPanel::iterations() const { return iterations_->value(); }

int TimingPanel::chartBarCount() const {
  return std::clamp((chart_->height() - kChartChrome) / kMinBarPitch, 3, kChartLayers);
}

void TimingPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (hasProfile_ && chartBarCount() != barsShown_) updateChart();
}

void TimingPanel::updateChart() {
  auto* chart = new QChart;
  chart->setTitle(hasProfile_ ? tr("Slowest layers (median ms)") : QString());
  chart->legend()->hide();
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->setBackgroundRoundness(0);
  std::vector<const LayerTiming*> slowest;
  for (const auto& layer : report_.layers) slowest.push_back(&layer);
  std::sort(slowest.begin(), slowest.end(), [](auto* a, auto* b) { return a->medianMs > b->medianMs; });
  barsShown_ = chartBarCount();
  if (slowest.size() > size_t(barsShown_)) slowest.resize(size_t(barsShown_));
  if (!slowest.empty()) {
    auto* bars = new QBarSet(tr("median ms"));
    bars->setColor(heatColor(0.55));
    bars->setBorderColor(heatColor(0.8));
    QStringList categories;
    // Horizontal bars grow upwards: add the slowest last so it sits on top.
    for (auto it = slowest.rbegin(); it != slowest.rend(); ++it) {
      *bars << (*it)->medianMs;
      categories << elided((*it)->name);
    }
    auto* series = new QHorizontalBarSeries;
    series->append(bars);
    series->setBarWidth(0.7);
    chart->addSeries(series);
    auto* names = new QBarCategoryAxis;
    names->append(categories);
    QFont small = names->labelsFont();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    names->setLabelsFont(small);
    names->setTruncateLabels(false);  // the names are short already (elided()); "..." said nothing
    chart->addAxis(names, Qt::AlignLeft);
    series->attachAxis(names);
    auto* values = new QValueAxis;
    values->setLabelFormat(QStringLiteral("%.3g"));
    values->setLabelsFont(small);
    values->setMin(0);
    chart->addAxis(values, Qt::AlignBottom);
    series->attachAxis(values);
    values->applyNiceNumbers();
  }
  QChart* old = chart_->chart();
  chart_->setChart(chart);
  delete old;
}

}  // namespace kiln::views
