#pragma once
// Nodes matching a search text (name, op type or tensor name), best matches first.
#include "graph/graph_structure.h"

#include <QAbstractListModel>

namespace kiln::views {

class SearchResultModel : public QAbstractListModel {
  Q_OBJECT
 public:
  static constexpr int kNodeRole = Qt::UserRole + 1;  // the structure node index (int)
  using QAbstractListModel::QAbstractListModel;

  // `structure` must outlive the model or be replaced (nullptr clears).
  void setStructure(const GraphStructure* structure);
  void search(const QString& text);
  int nodeAt(int row) const { return results_.at(size_t(row)); }

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  const GraphStructure* structure_ = nullptr;
  std::vector<int> results_;
};

}  // namespace kiln::views
