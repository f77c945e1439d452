#pragma once
// Precision debugging in one click each: "Find Layers to Keep" (the precision bisect) and "Advise"
// (the quantization advisor) on the engine last built, at a cosine criterion or the Accuracy
// tab's tolerances, holding layers back in fp32 or fp16. Both run in the background with progress and Cancel; their result lists the
// layers and colours the graph: the layers held back, or each layer's error when only it is
// reduced, with a legend.
#include "fusion/origin_map.h"

#include <kiln/precision_bisect.h>
#include <kiln/quantization_advisor.h>

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableView;

namespace kiln::views {

class PrecisionLayerModel;

// What the tools are asked: the criterion and what held-back layers run in. A tolerance
// criterion's atol / rtol are the caller's to fill (the Accuracy tab's).
struct PrecisionDebugRequest {
  AccuracyCriterion criterion;
  Precision keepPrecision = Precision::kFP32;
};

class PrecisionDebugPanel : public QWidget {
  Q_OBJECT
 public:
  explicit PrecisionDebugPanel(QWidget* parent = nullptr);

  PrecisionDebugRequest request() const;
  void setCriterion(double minCosine);  // cosine >= minCosine
  void setToleranceCriterion();         // every element within the Accuracy tab's atol / rtol

  void setCanRun(bool canRun, const QString& why);
  void setRunning(bool running);
  void showProgress(const QString& what, double fraction);
  void addTrial(const PrecisionTrial& trial);
  void setBisectResult(const PrecisionBisectResult& result, const AccuracyCriterion& criterion);
  void setAdvice(const QuantizationAdvice& advice);
  void showFailure(const QString& message);
  void showCancelled();
  void clear();

  bool hasResult() const { return hasResult_; }
  // The graph's colours: held-back layers at 1 and the others low (bisect), or each layer's error
  // in decades above a tenth of the smallest (advisor).
  std::vector<LayerValue> layerValues() const;
  QString heatmapTitle() const;
  // Named colours for the legend (bisect); empty for a continuous scale (advisor).
  std::vector<std::pair<double, QString>> heatmapCategories() const;

  QPushButton* bisectButton() const { return bisect_; }
  QPushButton* adviseButton() const { return advise_; }
  QPushButton* cancelButton() const { return cancel_; }
  QCheckBox* heatmapBox() const { return heatmap_; }
  PrecisionLayerModel* layerModel() const { return layers_; }
  QString statusText() const;
  int trialCount() const { return trials_; }

 signals:
  void bisectRequested();
  void adviceRequested();
  void cancelRequested();
  void heatmapToggled(bool shown);

 private:
  void finish(const QString& summary);

  enum class Result { kNone, kBisect, kAdvice };
  Result result_ = Result::kNone;
  bool hasResult_ = false;
  bool running_ = false;
  bool canRun_ = false;
  int trials_ = 0;
  QString keepLabel_, reducedLabel_, errorMeasure_;
  QComboBox* metric_;
  QDoubleSpinBox* minCosine_;
  QComboBox* keepPrecision_;
  QPushButton* bisect_;
  QPushButton* advise_;
  QPushButton* cancel_;
  QCheckBox* heatmap_;
  QProgressBar* progress_;
  QLabel* status_;
  PrecisionLayerModel* layers_;
  QTableView* table_;
};

}  // namespace kiln::views
