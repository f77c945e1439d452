#pragma once
// A layer's attributes as a table: name, type, value.
#include <kiln/network.h>

#include <QAbstractTableModel>

namespace kiln::views {

class AttributeTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kName, kType, kValue, kColumnCount };
  using QAbstractTableModel::QAbstractTableModel;

  // The layer must outlive the model or be replaced (pass nullptr to clear).
  void setLayer(const Layer* layer);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<std::pair<std::string, const Attribute*>> rows_;
};

}  // namespace kiln::views
