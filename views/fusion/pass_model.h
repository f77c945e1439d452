#pragma once
// The build's graph passes as a tree: one row per pass (layers before → after, time), its change
// lines ("fused Conv 'c1' + Relu 'r1' into kiln.FusedConv") as children.
#include <kiln/build_report.h>

#include <QAbstractItemModel>

namespace kiln::views {

class PassModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { kPass, kLayers, kChange, kTime, kColumnCount };
  using QAbstractItemModel::QAbstractItemModel;

  void setPasses(std::vector<PassRecord> passes);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  // Internal ids: 0 for pass rows, pass index + 1 for the change rows below a pass.
  static constexpr quintptr kPassRow = 0;
  std::vector<PassRecord> passes_;
};

}  // namespace kiln::views
