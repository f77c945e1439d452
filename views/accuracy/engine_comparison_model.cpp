#include "accuracy/engine_comparison_model.h"

#include "accuracy/tensor_metrics_model.h"
#include "common/value_format.h"

#include <QFont>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::views {
namespace {

const TensorMetrics* metricsOf(const std::vector<TensorMetrics>& outputs, const std::string& name) {
  const auto it = std::find_if(outputs.begin(), outputs.end(), [&](const TensorMetrics& m) { return m.name == name; });
  return it == outputs.end() || !it->why.empty() ? nullptr : &*it;
}

}  // namespace

void EngineComparisonModel::setEngines(std::vector<EngineColumn> engines) {
  beginResetModel();
  engines_ = std::move(engines);
  outputs_.clear();
  for (const EngineColumn& engine : engines_)
    for (const TensorMetrics& m : engine.outputs)
      if (std::find(outputs_.begin(), outputs_.end(), m.name) == outputs_.end()) outputs_.push_back(m.name);
  endResetModel();
}

double EngineComparisonModel::value(const std::string& output, Metric metric, size_t engine) const {
  const TensorMetrics* m = engine < engines_.size() ? metricsOf(engines_[engine].outputs, output) : nullptr;
  if (!m) return std::numeric_limits<double>::quiet_NaN();
  switch (metric) {
    case kCosine: return m->cosineSimilarity;
    case kRelativeL2: return relativeRmsError(*m);
    case kMaxAbs: return m->maxAbsError;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

int EngineComparisonModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(outputs_.size()) * kMetricCount;
}

int EngineComparisonModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kFirstEngine + int(engines_.size());
}

QVariant EngineComparisonModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const std::string& output = outputs_[size_t(index.row() / kMetricCount)];
  const auto metric = Metric(index.row() % kMetricCount);
  if (role == Qt::TextAlignmentRole && index.column() >= kFirstEngine)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::FontRole && index.column() == kOutput && metric == kCosine) {
    QFont bold;
    bold.setBold(true);
    return bold;
  }
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case kOutput: return metric == kCosine ? QString::fromStdString(output) : QString();
    case kMetric: return metric == kCosine ? tr("cosine") : metric == kRelativeL2 ? tr("rel. L2") : tr("max |error|");
    default: break;
  }
  const double v = value(output, metric, size_t(index.column() - kFirstEngine));
  if (std::isnan(v)) return tr("–");
  return metric == kCosine ? formatCosine(v) : formatError(v);
}

QVariant EngineComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == kOutput) return tr("Output");
  if (section == kMetric) return tr("Metric");
  if (section - kFirstEngine < int(engines_.size())) return engines_[size_t(section - kFirstEngine)].label;
  return {};
}

}  // namespace kiln::views
