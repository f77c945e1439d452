#include "accuracy/precision_debug_panel.h"

#include "accuracy/precision_layer_model.h"
#include "common/value_format.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace kiln::views {
namespace {

constexpr double kHeldBack = 1.0, kReduced = 0.12;  // bisect colours on the heat scale
constexpr double kSmallestShownError = 1e-7;

}  // namespace

PrecisionDebugPanel::PrecisionDebugPanel(QWidget* parent) : QWidget(parent) {
  auto* controls = new QHBoxLayout;
  metric_ = new QComboBox(this);
  metric_->addItem(tr("Cosine"), int(AccuracyCriterion::Metric::kCosine));
  metric_->addItem(tr("Accuracy tab's atol / rtol"), int(AccuracyCriterion::Metric::kTolerance));
  metric_->setToolTip(tr("What the engine must meet: every output's cosine similarity to the FP32 reference, or "
                         "every element within the Accuracy tab's tolerances"));
  minCosine_ = new QDoubleSpinBox(this);
  minCosine_->setRange(0.5, 1.0);
  minCosine_->setDecimals(5);
  minCosine_->setSingleStep(0.001);
  minCosine_->setValue(0.99);
  minCosine_->setPrefix(tr("cosine ≥ "));
  minCosine_->setToolTip(tr("Every output's cosine similarity to the FP32 reference must reach this"));
  keepPrecision_ = new QComboBox(this);
  keepPrecision_->addItem(tr("keep in fp32"), int(Precision::kFP32));
  keepPrecision_->addItem(tr("keep in fp16"), int(Precision::kFP16));
  keepPrecision_->setToolTip(tr("What the layers held back run in"));
  bisect_ = new QPushButton(tr("Find Layers to Keep"), this);
  advise_ = new QPushButton(tr("Advise"), this);
  cancel_ = new QPushButton(tr("Cancel"), this);
  heatmap_ = new QCheckBox(tr("Colour graph"), this);
  heatmap_->setChecked(true);
  heatmap_->setEnabled(false);
  controls->addWidget(metric_);
  controls->addWidget(minCosine_);
  controls->addWidget(keepPrecision_);
  controls->addWidget(bisect_);
  controls->addWidget(advise_);
  controls->addWidget(cancel_);
  controls->addWidget(heatmap_);
  controls->addStretch();

  progress_ = new QProgressBar(this);
  progress_->setRange(0, 100);
  progress_->setMaximumHeight(14);
  progress_->setTextVisible(false);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  layers_ = new PrecisionLayerModel(this);
  table_ = new QTableView(this);
  table_->setModel(layers_);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(22);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(PrecisionLayerModel::kLayer, QHeaderView::Stretch);
  table_->setTextElideMode(Qt::ElideMiddle);
  table_->setAlternatingRowColors(true);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(controls);
  layout->addWidget(progress_);
  layout->addWidget(status_);
  layout->addWidget(table_, 1);

  connect(bisect_, &QPushButton::clicked, this, &PrecisionDebugPanel::bisectRequested);
  connect(advise_, &QPushButton::clicked, this, &PrecisionDebugPanel::adviceRequested);
  connect(cancel_, &QPushButton::clicked, this, &PrecisionDebugPanel::cancelRequested);
  connect(heatmap_, &QCheckBox::toggled, this, &PrecisionDebugPanel::heatmapToggled);
  connect(metric_, &QComboBox::currentIndexChanged, this,
          [this] { minCosine_->setVisible(metric_->currentIndex() == 0); });
  setCanRun(false, tr("Build an engine in a reduced precision (INT8, FP16 or BF16) first"));
  clear();
}

PrecisionDebugRequest PrecisionDebugPanel::request() const {
  PrecisionDebugRequest r;
  r.criterion.metric = AccuracyCriterion::Metric(metric_->currentData().toInt());
  r.criterion.minCosine = minCosine_->value();
  r.keepPrecision = Precision(keepPrecision_->currentData().toInt());
  return r;
}

void PrecisionDebugPanel::setCriterion(double minCosine) {
  metric_->setCurrentIndex(0);
  minCosine_->setValue(minCosine);
}

void PrecisionDebugPanel::setToleranceCriterion() { metric_->setCurrentIndex(1); }

void PrecisionDebugPanel::setCanRun(bool canRun, const QString& why) {
  canRun_ = canRun;
  bisect_->setEnabled(canRun && !running_);
  advise_->setEnabled(canRun && !running_);
  bisect_->setToolTip(canRun ? tr("Bisect over the reduced layers for the fewest to hold back so the engine meets the "
                                  "criterion (kiln debug precision)")
                             : why);
  advise_->setToolTip(canRun ? tr("Per layer: the error with only it reduced and the time it saves; the worst to keep "
                                  "(kiln debug advise)")
                             : why);
}

void PrecisionDebugPanel::setRunning(bool running) {
  running_ = running;
  cancel_->setEnabled(running);
  bisect_->setEnabled(canRun_ && !running);
  advise_->setEnabled(canRun_ && !running);
  if (running) {
    trials_ = 0;
    progress_->setValue(0);
    status_->setText(tr("Starting…"));
  }
}

void PrecisionDebugPanel::showProgress(const QString& what, double fraction) {
  progress_->setValue(int(fraction * 100));
  status_->setText(tr("Trial %1 · %2").arg(trials_ + 1).arg(what));
}

void PrecisionDebugPanel::addTrial(const PrecisionTrial& trial) {
  trials_ = trial.index;
  status_->setText(tr("Trial %1 (%2, %3 held back): 1 − cosine %4, %5")
                       .arg(trial.index)
                       .arg(QString::fromStdString(trial.phase))
                       .arg(trial.kept.size())
                       .arg(formatError(1 - trial.score.worstCosine))
                       .arg(trial.score.pass ? tr("pass") : tr("fail")));
}

void PrecisionDebugPanel::finish(const QString& summary) {
  hasResult_ = true;
  progress_->setValue(100);
  status_->setText(summary);
  heatmap_->setEnabled(true);
  // A result colours the graph (the box may have been unticked by another heatmap).
  if (heatmap_->isChecked()) emit heatmapToggled(true);
  else heatmap_->setChecked(true);
}

void PrecisionDebugPanel::setBisectResult(const PrecisionBisectResult& result, const AccuracyCriterion& met) {
  result_ = Result::kBisect;
  keepLabel_ = QString::fromLatin1(toString(result.keepPrecision));
  layers_->setBisect(result);
  const QString criterion = QString::fromStdString(met.describe());
  finish(!result.allKeptPasses ? tr("Even with all %1 layers in %2 the engine misses %3: no set of layers can fix it.")
                                     .arg(result.candidates.size())
                                     .arg(keepLabel_, criterion)
         : result.reducedPasses ? tr("Nothing needs holding back: the engine meets %1 (%2 builds).")
                                      .arg(criterion)
                                      .arg(result.trials.size())
                                : tr("Hold back %1 of %2 layers in %3 to meet %4: worst cosine %5 (with none: %6); %7 "
                                     "builds.")
                                      .arg(result.keep.size())
                                      .arg(result.candidates.size())
                                      .arg(keepLabel_, criterion, formatCosine(result.finalScore.worstCosine),
                                           formatCosine(result.reducedScore.worstCosine))
                                      .arg(result.trials.size()));
}

void PrecisionDebugPanel::setAdvice(const QuantizationAdvice& advice) {
  result_ = Result::kAdvice;
  keepLabel_ = QString::fromLatin1(toString(advice.keepPrecision));
  reducedLabel_ = advice.layers.empty() ? QString() : QString::fromStdString(advice.layers.front().precision);
  errorMeasure_ = advice.criterion.metric == AccuracyCriterion::Metric::kCosine ? tr("1 − cosine") : tr("tolerance ratio");
  layers_->setAdvice(advice);
  const QString criterion = QString::fromStdString(advice.criterion.describe());
  finish(!advice.suggestionPasses
             ? tr("Even with all %1 layers in %2 the engine misses %3.").arg(advice.layers.size()).arg(keepLabel_, criterion)
         : advice.keep.empty()
             ? tr("Nothing needs keeping in %1: all %2 layers reduced meet %3 (worst cosine %4). End to end: %5 ms all "
                  "%1, %6 ms all reduced.")
                   .arg(keepLabel_)
                   .arg(advice.layers.size())
                   .arg(criterion, formatCosine(advice.reducedScore.worstCosine),
                        QString::number(advice.keptTotalMs, 'f', 3), QString::number(advice.reducedTotalMs, 'f', 3))
             : tr("Keep %1 of %2 layers in %3 to meet %4 (worst cosine %5; all reduced: %6). End to end: %7 ms all "
                  "%3, %8 ms all reduced, %9 ms suggested.")
                   .arg(advice.keep.size())
                   .arg(advice.layers.size())
                   .arg(keepLabel_, criterion, formatCosine(advice.suggestedScore.worstCosine),
                        formatCosine(advice.reducedScore.worstCosine), QString::number(advice.keptTotalMs, 'f', 3),
                        QString::number(advice.reducedTotalMs, 'f', 3), QString::number(advice.suggestedTotalMs, 'f', 3)));
}

void PrecisionDebugPanel::showFailure(const QString& message) {
  progress_->setValue(0);
  status_->setText(tr("Failed: %1").arg(message));
}

void PrecisionDebugPanel::showCancelled() {
  progress_->setValue(0);
  status_->setText(tr("Cancelled after %n trial(s).", nullptr, trials_));
}

void PrecisionDebugPanel::clear() {
  result_ = Result::kNone;
  hasResult_ = false;
  layers_->clear();
  heatmap_->setEnabled(false);
  progress_->setValue(0);
  cancel_->setEnabled(false);
  status_->setText(tr("Build an INT8 or FP16 engine, then find the layers it must keep in higher precision."));
}

QString PrecisionDebugPanel::statusText() const { return status_->text(); }

std::vector<LayerValue> PrecisionDebugPanel::layerValues() const {
  std::vector<LayerValue> values;
  if (result_ == Result::kBisect) {
    for (const auto& row : layers_->rows())
      values.push_back({row.name, row.keep ? kHeldBack : kReduced, row.keep ? keepLabel_ : tr("reduced")});
    return values;
  }
  // Decades above a floor one decade under the smallest error, as the accuracy heatmap does.
  double smallest = std::numeric_limits<double>::infinity();
  for (const auto& row : layers_->rows()) smallest = std::min(smallest, std::max(row.error, kSmallestShownError));
  for (const auto& row : layers_->rows()) {
    const double error = std::max(row.error, kSmallestShownError);
    values.push_back({row.name, std::log10(error / (smallest / 10)),
                      (row.keep ? tr("keep · ") : QString()) + formatError(row.error, 1)});
  }
  return values;
}

QString PrecisionDebugPanel::heatmapTitle() const {
  if (result_ == Result::kBisect) return tr("Precision bisect: layers to hold back in %1").arg(keepLabel_);
  return tr("Error with only this layer in %1 (%2)").arg(reducedLabel_, errorMeasure_);
}

std::vector<std::pair<double, QString>> PrecisionDebugPanel::heatmapCategories() const {
  if (result_ != Result::kBisect) return {};
  return {{kHeldBack, tr("held back in %1").arg(keepLabel_)}, {kReduced, tr("reduced precision")}};
}

}  // namespace kiln::views
