#include "graph/search_result_model.h"

#include "common/op_category.h"

#include <QColor>

namespace kiln::views {

void SearchResultModel::setStructure(const GraphStructure* structure) {
  beginResetModel();
  structure_ = structure;
  results_.clear();
  endResetModel();
}

void SearchResultModel::search(const QString& text) {
  beginResetModel();
  results_ = structure_ ? structure_->search(text.trimmed().toStdString()) : std::vector<int>{};
  endResetModel();
}

int SearchResultModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(results_.size()); }

int SearchResultModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant SearchResultModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !structure_) return {};
  const int node = results_[size_t(index.row())];
  const GraphNode& graphNode = structure_->nodes()[size_t(node)];
  const QString name = QString::fromStdString(graphNode.name);
  switch (role) {
    case kNodeRole: return node;
    case Qt::DisplayRole:
      if (index.column() == kName) return name;
      return graphNode.layer ? QString::fromStdString(graphNode.layer->opType)
                             : graphNode.kind == NodeKind::kInput ? tr("input") : tr("output");
    case Qt::ToolTipRole: return name;
    case Qt::DecorationRole:
      if (index.column() != kName) return {};
      return graphNode.layer ? categoryColor(opCategory(graphNode.layer->opType)) : QColor(0x37, 0x41, 0x51);
    case Qt::ForegroundRole:
      return index.column() == kOpType ? QColor(0x6B, 0x72, 0x80) : QVariant();
  }
  return {};
}

QVariant SearchResultModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == kName ? tr("Node") : tr("Op type");
}

}  // namespace kiln::views
