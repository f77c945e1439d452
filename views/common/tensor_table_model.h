#pragma once
// A layer's inputs and outputs (or a graph's) as a table: direction, role, name, type, shape.
#include <kiln/network.h>

#include <QAbstractTableModel>

namespace kiln::views {

class TensorTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kDirection, kRole, kName, kType, kShape, kColumnCount };
  // Qt::UserRole on any column: true when the row is a constant (weight).
  static constexpr int kIsConstantRole = Qt::UserRole + 1;
  using QAbstractTableModel::QAbstractTableModel;

  // `network` must outlive the model (pass nullptr to clear). Tensors not in it show as unknown.
  void setLayer(const Network* network, const Layer* layer);
  void setGraphInterface(const Network* network);  // the graph's inputs and outputs

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    bool isInput = true;
    QString role;
    std::string tensorName;
    const Tensor* tensor = nullptr;
  };
  std::vector<Row> rows_;
};

}  // namespace kiln::views
