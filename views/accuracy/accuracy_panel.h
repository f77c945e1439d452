#pragma once
// Accuracy comparison: the FP32 reference (the ONNX model on the reference executor) against the
// built engine on the same inputs; per-output metrics with pass/fail at the chosen tolerances, the
// error histogram per decade, and per-layer errors that can colour the graph. And every engine
// built from the model (FP32, FP16, INT8, ...) side by side against the same reference.
#include "accuracy/engine_comparison_model.h"
#include "common/input_data.h"
#include "fusion/origin_map.h"

#include <kiln/compare.h>

#include <QWidget>

class QCheckBox;
class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSplitter;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableView;
class QTabWidget;

namespace kiln::views {

class TensorMetricsModel;

// One comparison: the report plus both sides' outputs, so pass/fail follows tolerance edits
// without running again.
struct AccuracyRun {
  ComparisonReport report;
  std::map<std::string, HostTensor> reference, candidate;
  QString candidateLabel;  // "fp16 engine"
};

class AccuracyPanel : public QWidget {
  Q_OBJECT
 public:
  explicit AccuracyPanel(QWidget* parent = nullptr);

  void setRun(AccuracyRun run);
  void clear();
  bool hasRun() const { return hasRun_; }
  bool passes() const;
  Tolerance tolerance() const;
  void setTolerance(const Tolerance& tolerance);
  InputSource inputSource() const;
  // Each engine layer's relative RMS error in decades above a tenth of the smallest one, for
  // layerHeatmap (the most accurate layer reads 1, one ten times worse 2).
  std::vector<LayerValue> layerValues() const;

  void setCanCompare(bool canCompare, const QString& why);
  void setRunning(bool running);
  // The engines side by side (one column each), shown in their own tab.
  void setEngineComparison(std::vector<EngineColumn> engines);
  void setCanCompareEngines(bool canCompare, const QString& why);
  EngineComparisonModel* engineModel() const { return engines_; }
  QPushButton* compareEnginesButton() const { return compareEnginesButton_; }

  TensorMetricsModel* outputModel() const { return outputs_; }
  TensorMetricsModel* layerModel() const { return layers_; }
  QCheckBox* heatmapBox() const { return heatmap_; }
  QLabel* verdictLabel() const { return verdict_; }
  QChartView* histogramView() const { return histogram_; }
  // The histogram shown: all outputs' counts per decade summed, or the selected output's.
  std::vector<int64_t> shownHistogram() const;

  void saveSettings() const;
  void restoreSettings();

 signals:
  void compareRequested();
  void compareEnginesRequested();
  void heatmapToggled(bool shown);

 private:
  QWidget* createControls();
  void remeasure();
  void updateVerdict();
  void updateHistogram();

  AccuracyRun run_;
  bool hasRun_ = false;
  TensorMetricsModel* outputs_;
  TensorMetricsModel* layers_;
  EngineComparisonModel* engines_;
  QTabWidget* tabs_;
  QTableView* engineTable_;
  QTableView* outputTable_;
  QSplitter* results_;  // tables and histogram, hidden until there is a comparison
  QTableView* layerTable_;
  QChartView* histogram_;
  QLabel* verdict_;
  QDoubleSpinBox* atol_;
  QDoubleSpinBox* rtol_;
  QComboBox* inputKind_;
  QSpinBox* seed_;
  QLineEdit* folder_;
  QPushButton* compareButton_;
  QPushButton* compareEnginesButton_;
  QCheckBox* heatmap_;
};

}  // namespace kiln::views
