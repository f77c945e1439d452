#include "fusion/engine_layer_model.h"

#include "common/op_category.h"

#include <QColor>
#include <QFont>

namespace kiln::views {
namespace {

QString joined(const std::vector<std::string>& names, const QString& separator) {
  QStringList parts;
  for (const std::string& name : names) parts << QString::fromStdString(name);
  return parts.join(separator);
}

// "kiln.FusedConv" → "Conv": a fused layer takes the colour of the op it is built around.
std::string baseOpType(const std::string& type) {
  const auto dot = type.rfind('.');
  std::string bare = dot == std::string::npos ? type : type.substr(dot + 1);
  if (bare.rfind("Fused", 0) == 0 && bare.size() > 5) bare = bare.substr(5);
  return bare;
}

}  // namespace

void EngineLayerModel::setLayers(std::vector<LayerSummary> layers) {
  beginResetModel();
  layers_ = std::move(layers);
  endResetModel();
}

int EngineLayerModel::rowOfLayer(const std::string& name) const {
  for (size_t row = 0; row < layers_.size(); ++row)
    if (layers_[row].name == name) return int(row);
  return -1;
}

int EngineLayerModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(layers_.size()); }

int EngineLayerModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant EngineLayerModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const LayerSummary& layer = layers_[size_t(index.row())];
  const bool fused = layer.origins.size() > 1;
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case kName: return QString::fromStdString(layer.name);
        case kType: return QString::fromStdString(layer.type);
        case kPrecision: return QString::fromStdString(layer.precision);
        case kTactic: return QString::fromStdString(layer.tactic);
        case kOrigins:
          return fused ? QStringLiteral("%1 × %2").arg(layer.origins.size()).arg(joined(layer.origins, QStringLiteral(", ")))
                       : joined(layer.origins, QStringLiteral(", "));
      }
      return {};
    case Qt::ToolTipRole:
      if (index.column() == kOrigins && !layer.origins.empty())
        return tr("ONNX nodes in this layer:\n%1").arg(joined(layer.origins, QStringLiteral("\n")));
      return {};
    case Qt::DecorationRole:
      return index.column() == kType ? QVariant(categoryColor(opCategory(baseOpType(layer.type)))) : QVariant();
    case Qt::FontRole:
      if (index.column() == kType && fused) {
        QFont font;
        font.setBold(true);
        return font;
      }
      return {};
    case Qt::ForegroundRole:
      return index.column() == kTactic ? QVariant(QColor(0x4B, 0x55, 0x63)) : QVariant();
    default:
      return {};
  }
}

QVariant EngineLayerModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  switch (section) {
    case kName: return tr("Engine layer");
    case kType: return tr("Type");
    case kPrecision: return tr("Precision");
    case kTactic: return tr("Tactic");
    case kOrigins: return tr("Fused ONNX nodes");
    default: return {};
  }
}

}  // namespace kiln::views
