#include "accuracy/tensor_metrics_model.h"

#include "common/value_format.h"

#include <QColor>
#include <QFont>

#include <cmath>

namespace kiln::views {

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
        case kMaxAbs: return formatError(m.maxAbsError);
        case kMaxRel: return formatError(m.maxRelError);
        case kMeanAbs: return formatError(m.meanAbsError);
        case kRelativeRms: return formatError(relativeRmsError(m));
        case kCosine: return formatCosine(m.cosineSimilarity);
        case kSnr: return formatDecibels(m.snrDb);
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
  if (orientation != Qt::Horizontal) return {};
  // Short titles keep the table narrow enough to show every column in a low bottom dock; the
  // tooltips say exactly what each one measures.
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case kMaxAbs: return tr("Largest |candidate − reference|");
      case kMaxRel: return tr("Largest |candidate − reference| / |reference|");
      case kMeanAbs: return tr("Mean of |candidate − reference|");
      case kRelativeRms: return tr("Relative RMS error: ‖candidate − reference‖ / ‖reference‖");
      case kCosine: return tr("Cosine similarity of candidate and reference (1 = same direction)");
      case kSnr: return tr("Signal-to-noise ratio in dB: 10·log10(Σ reference² / Σ error²)");
      case kFailing: return tr("Elements outside |candidate − reference| ≤ atol + rtol·|reference|");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case kTensor: return tr("Tensor");
    case kLayer: return tr("Engine layer");
    case kElements: return tr("Elements");
    case kMaxAbs: return tr("Max |err|");
    case kMaxRel: return tr("Max rel");
    case kMeanAbs: return tr("Mean |err|");
    case kRelativeRms: return tr("Rel RMS");
    case kCosine: return tr("Cosine");
    case kSnr: return tr("SNR dB");
    case kFailing: return tr("Failing");
    case kResult: return tr("Result");
    default: return {};
  }
}

}  // namespace kiln::views
