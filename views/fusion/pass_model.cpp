#include "fusion/pass_model.h"

#include <QColor>
#include <QFont>

namespace kiln::views {

void PassModel::setPasses(std::vector<PassRecord> passes) {
  beginResetModel();
  passes_ = std::move(passes);
  endResetModel();
}

QModelIndex PassModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, kPassRow);
  return createIndex(row, column, quintptr(parent.row()) + 1);
}

QModelIndex PassModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kPassRow) return {};
  return createIndex(int(child.internalId() - 1), 0, kPassRow);
}

int PassModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return int(passes_.size());
  if (parent.internalId() != kPassRow || parent.column() != 0) return 0;
  return int(passes_[size_t(parent.row())].changes.size());
}

int PassModel::columnCount(const QModelIndex&) const { return kColumnCount; }

QVariant PassModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  if (index.internalId() != kPassRow) {
    const PassRecord& pass = passes_[size_t(index.internalId() - 1)];
    if (index.column() != kPass) return {};
    const QString change = QString::fromStdString(pass.changes[size_t(index.row())]);
    if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return change;
    if (role == Qt::ForegroundRole) return QColor(0x37, 0x41, 0x51);
    return {};
  }
  const PassRecord& pass = passes_[size_t(index.row())];
  const int64_t removed = pass.layersBefore - pass.layersAfter;
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case kPass: return QString::fromStdString(pass.name);
        case kLayers: return QStringLiteral("%1 → %2").arg(pass.layersBefore).arg(pass.layersAfter);
        case kChange:
          return removed == 0 ? QStringLiteral("·") : QStringLiteral("%1%2").arg(removed > 0 ? "−" : "+").arg(std::abs(removed));
        case kTime: return QStringLiteral("%1 ms").arg(pass.milliseconds, 0, 'f', 2);
      }
      return {};
    case Qt::ForegroundRole:
      if (index.column() == kChange && removed > 0) return QColor(0x15, 0x80, 0x3D);
      if (pass.changes.empty()) return QColor(0x9C, 0xA3, 0xAF);
      return {};
    case Qt::FontRole:
      if (!pass.changes.empty() && index.column() == kPass) {
        QFont font;
        font.setBold(true);
        return font;
      }
      return {};
    case Qt::TextAlignmentRole:
      return index.column() == kPass ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    case Qt::ToolTipRole:
      return tr("%n change(s)", nullptr, int(pass.changes.size()));
    default:
      return {};
  }
}

QVariant PassModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kPass: return tr("Pass");
    case kLayers: return tr("Layers");
    case kChange: return tr("Δ");
    case kTime: return tr("Time");
    default: return {};
  }
}

}  // namespace kiln::views
