#include "common/tensor_table_model.h"

#include "common/value_format.h"

#include <QFont>

namespace kiln::views {

void TensorTableModel::setLayer(const Network* network, const Layer* layer) {
  beginResetModel();
  rows_.clear();
  if (network && layer) {
    for (size_t i = 0; i < layer->inputs.size(); ++i)
      if (!layer->inputs[i].empty())
        rows_.push_back({true, inputRoleName(*layer, i), layer->inputs[i], network->findTensor(layer->inputs[i])});
    for (size_t i = 0; i < layer->outputs.size(); ++i)
      if (!layer->outputs[i].empty())
        rows_.push_back({false, outputRoleName(*layer, i), layer->outputs[i], network->findTensor(layer->outputs[i])});
  }
  endResetModel();
}

void TensorTableModel::setGraphInterface(const Network* network) {
  beginResetModel();
  rows_.clear();
  if (network) {
    for (const std::string& name : network->runtimeInputs())
      rows_.push_back({true, QString(), name, network->findTensor(name)});
    for (const std::string& name : network->outputs())
      rows_.push_back({false, QString(), name, network->findTensor(name)});
  }
  endResetModel();
}

int TensorTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

int TensorTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant TensorTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& row = rows_[size_t(index.row())];
  const bool isConstant = row.tensor && row.tensor->isConstant();
  if (role == kIsConstantRole) return isConstant;
  if (role == Qt::FontRole && isConstant) {
    QFont font;
    font.setItalic(true);
    return font;
  }
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case kDirection: return row.isInput ? tr("in") : tr("out");
    case kRole: return row.role;
    case kName: return QString::fromStdString(row.tensorName);
    case kType:
      if (!row.tensor || row.tensor->dtype == DataType::kUndefined) return QStringLiteral("?");
      return QString::fromUtf8(toString(row.tensor->dtype));
    case kShape:
      if (!row.tensor) return QStringLiteral("?");
      return isConstant ? formatDims(row.tensor->constant->dims()) : formatShape(row.tensor->shape);
  }
  return {};
}

QVariant TensorTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kDirection: return QString();
    case kRole: return tr("Role");
    case kName: return tr("Tensor");
    case kType: return tr("Type");
    case kShape: return tr("Shape");
  }
  return {};
}

}  // namespace kiln::views
