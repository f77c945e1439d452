#include "accuracy/tensor_metrics_model.h"

#include <QColor>
#include <QFont>

#include <cmath>

namespace kiln::views {
namespace {

QString scientific(double value) {
  if (std::isinf(value)) return QStringLiteral("∞");
  return value == 0 ? QStringLiteral("0") : QString::number(value, 'e', 2);
}

}  // namespace

double relativeRmsError(const TensorMetrics& metrics) {
  if (metrics.snrDb >= 999) return 0;
  return std::pow(10.0, -metrics.snrDb / 20.0);
}

void TensorMetricsModel::setMetrics(std::vector<TensorMetrics> metrics) {
  beginResetModel();
  metrics_ = std::move(metrics);
  endResetModel();
}

int TensorMetricsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(metrics_.size()); }

int TensorMetricsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant TensorMetricsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const TensorMetrics& m = metrics_[size_t(index.row())];
  const int column = index.column();
  if (role == kSortRole) {
    switch (column) {
      case kTensor: return QString::fromStdString(m.name);
      case kLayer: return QString::fromStdString(m.layer);
      case kElements: return qlonglong(m.elements);
      case kMaxAbs: return m.maxAbsError;
      case kMaxRel: return m.maxRelError;
      case kMeanAbs: return m.meanAbsError;
      case kRelativeRms: return relativeRmsError(m);
      case kCosine: return m.cosineSimilarity;
      case kSnr: return m.snrDb;
      case kFailing: return qlonglong(m.failing);
      case kResult: return m.pass;
    }
    return {};
  }
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case kTensor: return QString::fromStdString(m.name);
        case kLayer: return QString::fromStdString(m.layer);
        case kElements: return qlonglong(m.elements);
        case kMaxAbs: return scientific(m.maxAbsError);
        case kMaxRel: return scientific(m.maxRelError);
        case kMeanAbs: return scientific(m.meanAbsError);
        case kRelativeRms: return scientific(relativeRmsError(m));
        case kCosine: return QString::number(m.cosineSimilarity, 'f', 6);
        case kSnr: return m.snrDb >= 999 ? QStringLiteral("∞") : QString::number(m.snrDb, 'f', 1);
        case kFailing: return qlonglong(m.failing);
        case kResult: return m.pass ? tr("PASS") : tr("FAIL");
      }
      return {};
    case Qt::ToolTipRole:
      if (!m.why.empty()) return QString::fromStdString(m.why);
      if (column == kRelativeRms) return tr("‖candidate − reference‖ / ‖reference‖");
      if (column == kFailing) return tr("Elements outside |candidate − reference| ≤ atol + rtol·|reference|");
      return {};
    case Qt::ForegroundRole:
      if (column == kResult) return m.pass ? QColor(0x15, 0x80, 0x3D) : QColor(0xB9, 0x1C, 0x1C);
      if (column == kFailing && m.failing > 0) return QColor(0xB9, 0x1C, 0x1C);
      return {};
    case Qt::FontRole:
      if (column == kResult) {
        QFont font;
        font.setBold(true);
        return font;
      }
      return {};
    case Qt::TextAlignmentRole:
      return column >= kElements && column != kResult ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
    default:
      return {};
  }
}

QVariant TensorMetricsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kTensor: return tr("Tensor");
    case kLayer: return tr("Engine layer");
    case kElements: return tr("Elements");
    case kMaxAbs: return tr("Max abs err");
    case kMaxRel: return tr("Max rel err");
    case kMeanAbs: return tr("Mean abs err");
    case kRelativeRms: return tr("Rel. RMS err");
    case kCosine: return tr("Cosine");
    case kSnr: return tr("SNR dB");
    case kFailing: return tr("Failing");
    case kResult: return tr("Result");
    default: return {};
  }
}

}  // namespace kiln::views
