#include "inspector/weight_histogram.h"

#include "common/tensor_stats.h"
#include "common/value_format.h"

#include <kiln/error.h>

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QLineSeries>
#include <QValueAxis>
#include <QVBoxLayout>

#include <cmath>

namespace kiln::views {

WeightHistogram::WeightHistogram(QWidget* parent) : QWidget(parent) {
  stats_ = new QLabel(this);
  stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stats_->setWordWrap(true);
  chartView_ = new QChartView(this);
  chartView_->setRenderHint(QPainter::Antialiasing);
  chartView_->setMinimumHeight(100);
  chartView_->chart()->legend()->hide();
  chartView_->chart()->setMargins(QMargins(2, 2, 2, 2));
  chartView_->chart()->setBackgroundRoundness(0);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(stats_);
  layout->addWidget(chartView_, 1);
  setTensor(nullptr);
}

QString WeightHistogram::statsText() const { return stats_->text(); }

void WeightHistogram::setTensor(const HostTensor* tensor) {
  QChart* chart = chartView_->chart();
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) chart->removeAxis(axis);
  chartView_->setVisible(false);
  if (!tensor || tensor->elementCount() == 0) {
    stats_->setText(tensor ? tr("The tensor is empty.") : QString());
    return;
  }
  TensorStats stats;
  try {
    stats = computeTensorStats(*tensor);
  } catch (const Error& e) {
    stats_->setText(QString::fromUtf8(e.what()));
    return;
  }
  QString text = tr("⟨%1⟩ %2 · %3 values\nmin %4 · max %5\nmean %6 · std %7")
                     .arg(formatDims(tensor->dims()), QString::fromUtf8(toString(tensor->dtype())),
                          formatCount(tensor->elementCount()))
                     .arg(stats.min, 0, 'g', 5)
                     .arg(stats.max, 0, 'g', 5)
                     .arg(stats.mean, 0, 'g', 5)
                     .arg(stats.stddev, 0, 'g', 5);
  if (stats.nonFinite) text += tr("\n%1 NaN or infinite values").arg(stats.nonFinite);
  stats_->setText(text);
  if (stats.histogram.empty()) return;

  // Stepped outline: each bin is a flat top from its left to its right edge.
  auto* upper = new QLineSeries;
  const double width = (stats.max - stats.min) / double(stats.histogram.size());
  int64_t peak = 0;
  for (size_t bin = 0; bin < stats.histogram.size(); ++bin) {
    const double left = stats.min + width * double(bin), right = left + (width > 0 ? width : 1);
    upper->append(left, double(stats.histogram[bin]));
    upper->append(right, double(stats.histogram[bin]));
    peak = std::max(peak, stats.histogram[bin]);
  }
  auto* area = new QAreaSeries(upper);
  area->setColor(QColor(0x33, 0x5E, 0x9E, 170));
  area->setBorderColor(QColor(0x33, 0x5E, 0x9E));
  chart->addSeries(area);
  auto* x = new QValueAxis;
  x->setRange(stats.min, width > 0 ? stats.max : stats.min + 1);
  // Fixed decimals: "%g" prints the tick near zero as -5.8e-17.
  const double span = std::max(std::abs(stats.min), std::abs(stats.max));
  x->setLabelFormat(span >= 100 ? QStringLiteral("%.0f") : span >= 0.01 ? QStringLiteral("%.2f") : QStringLiteral("%.1e"));
  x->setTickCount(5);
  auto* y = new QValueAxis;
  y->setRange(0, double(peak) * 1.05);
  y->setLabelFormat(QStringLiteral("%d"));
  y->setTickCount(4);
  QFont small = x->labelsFont();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  x->setLabelsFont(small);
  y->setLabelsFont(small);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  area->attachAxis(x);
  area->attachAxis(y);
  chartView_->setVisible(true);
}

}  // namespace kiln::views
