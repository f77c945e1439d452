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

QVariant SearchResultModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !structure_) return {};
  const int node = results_[size_t(index.row())];
  const GraphNode& graphNode = structure_->nodes()[size_t(node)];
  switch (role) {
    case kNodeRole: return node;
    case Qt::DisplayRole: {
      QString kind = graphNode.layer ? QString::fromStdString(graphNode.layer->opType)
                                     : graphNode.kind == NodeKind::kInput ? tr("input") : tr("output");
      return QStringLiteral("%1  —  %2").arg(kind, QString::fromStdString(graphNode.name));
    }
    case Qt::ToolTipRole: return QString::fromStdString(graphNode.name);
    case Qt::DecorationRole:
      return graphNode.layer ? categoryColor(opCategory(graphNode.layer->opType)) : QColor(0x37, 0x41, 0x51);
  }
  return {};
}

}  // namespace kiln::views
