#include "common/attribute_table_model.h"

#include "common/value_format.h"

namespace kiln::views {

void AttributeTableModel::setLayer(const Layer* layer) {
  beginResetModel();
  rows_.clear();
  if (layer)
    for (const auto& [name, attribute] : layer->attributes) rows_.emplace_back(name, &attribute);
  endResetModel();
}

int AttributeTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(rows_.size());
}

int AttributeTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant AttributeTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto& [name, attribute] = rows_[size_t(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case kName: return QString::fromStdString(name);
      case kType: return QString::fromUtf8(attribute->typeName());
      case kValue: return formatAttribute(*attribute, 64);
    }
  }
  if (role == Qt::ToolTipRole && index.column() == kValue) return formatAttribute(*attribute, 4096);
  return {};
}

QVariant AttributeTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kName: return tr("Attribute");
    case kType: return tr("Type");
    case kValue: return tr("Value");
  }
  return {};
}

}  // namespace kiln::views
