#pragma once
// A model's properties as a two-column table: format, producer, opsets, inputs/outputs, sizes.
#include <kiln/network.h>

#include <QAbstractTableModel>

namespace kiln::views {

class ModelPropertiesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kProperty, kValue, kColumnCount };
  using QAbstractTableModel::QAbstractTableModel;

  void setNetwork(const Network* network);  // nullptr clears

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<std::pair<QString, QString>> rows_;
};

}  // namespace kiln::views
