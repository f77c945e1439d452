#pragma once
// Engines side by side (FP32, FP16, INT8, ... built from one model): for each output its cosine
// similarity, relative L2 error and max |error| against the FP32 reference, one column per engine.
#include <kiln/compare.h>

#include <QAbstractTableModel>

namespace kiln::views {

// One engine's outputs measured against the reference.
struct EngineColumn {
  QString label;  // "int8 engine"
  std::vector<TensorMetrics> outputs;
};

class EngineComparisonModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kOutput, kMetric, kFirstEngine };
  enum Metric { kCosine, kRelativeL2, kMaxAbs, kMetricCount };
  using QAbstractTableModel::QAbstractTableModel;

  void setEngines(std::vector<EngineColumn> engines);
  const std::vector<EngineColumn>& engines() const { return engines_; }
  // The value behind cell (output, metric, engine), NaN where that engine lacks the output.
  double value(const std::string& output, Metric metric, size_t engine) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<EngineColumn> engines_;
  std::vector<std::string> outputs_;  // rows come in groups of kMetricCount per output
};

}  // namespace kiln::views
