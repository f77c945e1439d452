#pragma once
// Accuracy metrics per tensor (outputs, or every intermediate tensor for the per-layer view):
// max abs / rel error, mean abs error, cosine similarity, SNR, failing elements and pass/fail.
#include <kiln/compare.h>

#include <QAbstractTableModel>

namespace kiln::views {

class TensorMetricsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    kTensor, kLayer, kElements, kMaxAbs, kMaxRel, kMeanAbs, kRelativeRms, kCosine, kSnr, kFailing, kResult,
    kColumnCount
  };
  static constexpr int kSortRole = Qt::UserRole + 1;
  using QAbstractTableModel::QAbstractTableModel;

  void setMetrics(std::vector<TensorMetrics> metrics);
  const std::vector<TensorMetrics>& metrics() const { return metrics_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<TensorMetrics> metrics_;
};

// ‖candidate − reference‖ / ‖reference‖, from the SNR (10^(−SNR/20)); 0 when they are identical.
double relativeRmsError(const TensorMetrics& metrics);

}  // namespace kiln::views
