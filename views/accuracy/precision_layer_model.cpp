#include "accuracy/precision_layer_model.h"

#include "common/value_format.h"

#include <QColor>
#include <QFont>

#include <algorithm>

namespace kiln::views {

void PrecisionLayerModel::setRows(std::vector<Row> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

void PrecisionLayerModel::setBisect(const PrecisionBisectResult& result) {
  keepLabel_ = QString::fromLatin1(toString(result.keepPrecision));
  std::vector<Row> rows;
  for (const auto& name : result.candidates) {
    Row row;
    row.name = name;
    row.keep = std::find(result.keep.begin(), result.keep.end(), name) != result.keep.end();
    rows.push_back(std::move(row));
  }
  setRows(std::move(rows));
}

void PrecisionLayerModel::setAdvice(const QuantizationAdvice& advice) {
  keepLabel_ = QString::fromLatin1(toString(advice.keepPrecision));
  std::vector<Row> rows;
  for (const LayerAdvice& a : advice.layers)
    rows.push_back({a.name, a.type, a.alone.error, a.savedMs(), a.pareto, a.keep});
  setRows(std::move(rows));
}

void PrecisionLayerModel::clear() { setRows({}); }

int PrecisionLayerModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

int PrecisionLayerModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant PrecisionLayerModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& row = rows_[size_t(index.row())];
  if (role == Qt::FontRole && row.keep) {
    QFont bold;
    bold.setBold(true);
    return bold;
  }
  if (role == Qt::TextAlignmentRole && (index.column() == kError || index.column() == kSavedMs))
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kLayer: return QString::fromStdString(row.name);
    case kType: return QString::fromStdString(row.type);
    case kError: return std::isnan(row.error) ? QStringLiteral("–") : formatError(row.error);
    case kSavedMs: return std::isnan(row.savedMs) ? QStringLiteral("–") : QString::number(row.savedMs, 'f', 3);
    case kKeep: return row.keep ? tr("keep in %1").arg(keepLabel_) : row.pareto ? tr("Pareto") : QString();
  }
  return {};
}

QVariant PrecisionLayerModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kLayer: return tr("Layer");
    case kType: return tr("Type");
    case kError: return tr("Error alone");
    case kSavedMs: return tr("Saves (ms)");
    case kKeep: return tr("Suggestion");
  }
  return {};
}

}  // namespace kiln::views
