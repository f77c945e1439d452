#pragma once
// Nodes matching a search text (name, op type or tensor name), best matches first; with no text,
// every node in graph order, so the list doubles as an outline of the model. Two columns: the
// node's name and its op type ("input" / "output" for graph inputs and outputs).
#include "graph/graph_structure.h"

#include <QAbstractTableModel>

namespace kiln::views {

class SearchResultModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kName, kOpType, kColumnCount };
  static constexpr int kNodeRole = Qt::UserRole + 1;  // the structure node index (int)
  using QAbstractTableModel::QAbstractTableModel;

  // `structure` must outlive the model or be replaced (nullptr clears).
  void setStructure(const GraphStructure* structure);
  void search(const QString& text);
  int nodeAt(int row) const { return results_.at(size_t(row)); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  const GraphStructure* structure_ = nullptr;
  std::vector<int> results_;
};

}  // namespace kiln::views
