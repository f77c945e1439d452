#pragma once
// Layer timings: a sortable table and a bar chart of the slowest layers, from a local profile run
// or a kiln-profile-1 JSON file (made by `kiln profile --export-profile`, maybe on another
// machine); the timings can colour the graph as a heatmap.
#include "fusion/origin_map.h"

#include <kiln/profile_report.h>

#include <QWidget>

class QCheckBox;
class QChartView;
class QLabel;
class QSplitter;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QTableView;

namespace kiln::views {

class LayerTimingModel;

class TimingPanel : public QWidget {
  Q_OBJECT
 public:
  // Bars in the chart: the slowest layers, as many as have room for a readable name (at most
  // this many); the table has them all.
  static constexpr int kChartLayers = 12;

  explicit TimingPanel(QWidget* parent = nullptr);

  void setProfile(const ProfileReport& report, const QString& source);
  void clear();
  bool hasProfile() const { return hasProfile_; }
  const ProfileReport& profile() const { return report_; }
  // Each layer's share of the total, for layerHeatmap.
  std::vector<LayerValue> layerValues() const;

  void setCanProfile(bool canProfile, const QString& why);
  void setRunning(bool running);
  int iterations() const;

  LayerTimingModel* model() const { return model_; }
  QSortFilterProxyModel* sortedModel() const { return sorted_; }
  QTableView* table() const { return table_; }
  QCheckBox* heatmapBox() const { return heatmap_; }
  QChartView* chartView() const { return chart_; }

 signals:
  void profileRequested(int iterations);
  void loadRequested();
  void heatmapToggled(bool shown);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void updateChart();
  int chartBarCount() const;

  ProfileReport report_;
  bool hasProfile_ = false;
  int barsShown_ = 0;
  LayerTimingModel* model_;
  QSortFilterProxyModel* sorted_;
  QTableView* table_;
  QChartView* chart_;
  QSplitter* results_;  // table and chart, hidden until there is a profile
  QLabel* summary_;
  QPushButton* profileButton_;
  QPushButton* loadButton_;
  QSpinBox* iterations_;
  QCheckBox* heatmap_;
};

}  // namespace kiln::views
