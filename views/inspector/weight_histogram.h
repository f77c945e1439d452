#pragma once
// A weight tensor's value distribution (Qt Charts area chart) with min/max/mean/std above it.
#include <kiln/host_tensor.h>

#include <QWidget>

class QLabel;
class QChartView;

namespace kiln::views {

class WeightHistogram : public QWidget {
  Q_OBJECT
 public:
  explicit WeightHistogram(QWidget* parent = nullptr);
  void setTensor(const HostTensor* tensor);  // nullptr clears
  QString statsText() const;

 private:
  QLabel* stats_;
  QChartView* chartView_;
};

}  // namespace kiln::views
