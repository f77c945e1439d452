#pragma once
// Per-layer timings of a profile (kiln-profile-1) as a sortable table: layer, type, tactic,
// precision, median ms and its share of the total. kSortRole gives raw numbers for sorting.
#include <kiln/profile_report.h>

#include <QAbstractTableModel>

namespace kiln::views {

class LayerTimingModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kLayer, kType, kTactic, kPrecision, kMedian, kPercent, kColumnCount };
  static constexpr int kSortRole = Qt::UserRole + 1;
  using QAbstractTableModel::QAbstractTableModel;

  void setLayers(std::vector<LayerTiming> layers);
  const std::vector<LayerTiming>& layers() const { return layers_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<LayerTiming> layers_;
  double largestPercent_ = 0;
};

}  // namespace kiln::views
