#include "timing/layer_timing_model.h"

#include "common/heat_scale.h"

#include <algorithm>

namespace kiln::views {

void LayerTimingModel::setLayers(std::vector<LayerTiming> layers) {
  beginResetModel();
  layers_ = std::move(layers);
  largestPercent_ = 0;
  for (const auto& layer : layers_) largestPercent_ = std::max(largestPercent_, layer.percent);
  endResetModel();
}

int LayerTimingModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(layers_.size()); }

int LayerTimingModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant LayerTimingModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const LayerTiming& layer = layers_[size_t(index.row())];
  const auto text = [&]() -> QVariant {
    switch (index.column()) {
      case kLayer: return QString::fromStdString(layer.name);
      case kType: return QString::fromStdString(layer.type);
      case kTactic: return QString::fromStdString(layer.tactic);
      case kPrecision: return QString::fromStdString(layer.precision);
    }
    return {};
  };
  switch (role) {
    case Qt::DisplayRole:
      if (index.column() == kMedian) return QString::number(layer.medianMs, 'f', 4);
      if (index.column() == kPercent) return QStringLiteral("%1 %").arg(layer.percent, 0, 'f', 1);
      return text();
    case kSortRole:
      if (index.column() == kMedian) return layer.medianMs;
      if (index.column() == kPercent) return layer.percent;
      return text();
    case Qt::ToolTipRole:
      if (index.column() == kMedian)
        return tr("median %1 ms · mean %2 ms · min %3 ms")
            .arg(layer.medianMs, 0, 'f', 4)
            .arg(layer.meanMs, 0, 'f', 4)
            .arg(layer.minMs, 0, 'f', 4);
      return text();
    case Qt::BackgroundRole:
      // The share column doubles as a heat scale, like the graph's colouring.
      if (index.column() == kPercent && largestPercent_ > 0) {
        QColor colour = heatColor(layer.percent / largestPercent_);
        colour.setAlpha(150);
        return colour;
      }
      return {};
    case Qt::TextAlignmentRole:
      return index.column() >= kMedian ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
    default:
      return {};
  }
}

QVariant LayerTimingModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kLayer: return tr("Layer");
    case kType: return tr("Type");
    case kTactic: return tr("Tactic");
    case kPrecision: return tr("Precision");
    case kMedian: return tr("Median ms");
    case kPercent: return tr("% of total");
    default: return {};
  }
}

}  // namespace kiln::views
