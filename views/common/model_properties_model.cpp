#include "common/model_properties_model.h"

#include "common/value_format.h"

namespace kiln::views {
namespace {

QString tensorSummary(const Network& network, const std::string& name) {
  const Tensor* tensor = network.findTensor(name);
  return QString::fromStdString(name) + QStringLiteral(": ") +
         (tensor ? formatTensorType(*tensor) : QStringLiteral("?"));
}

}  // namespace

void ModelPropertiesModel::setNetwork(const Network* network) {
  beginResetModel();
  rows_.clear();
  if (network) {
    const ModelInfo& info = network->info();
    auto add = [this](const QString& key, const QString& value) {
      if (!value.isEmpty()) rows_.emplace_back(key, value);
    };
    add(tr("Format"), tr("ONNX IR version %1").arg(info.irVersion));
    add(tr("Producer"), QString::fromStdString(info.producerName + " " + info.producerVersion).trimmed());
    add(tr("Graph"), QString::fromStdString(info.graphName));
    add(tr("Domain"), QString::fromStdString(info.domain));
    if (info.modelVersion) add(tr("Model version"), QString::number(info.modelVersion));
    for (const auto& [domain, version] : info.opsetImports)
      add(tr("Opset"), QStringLiteral("%1 v%2").arg(domain.empty() ? QStringLiteral("ai.onnx")
                                                                   : QString::fromStdString(domain))
                           .arg(version));
    for (const std::string& input : network->runtimeInputs()) add(tr("Input"), tensorSummary(*network, input));
    for (const std::string& output : network->outputs()) add(tr("Output"), tensorSummary(*network, output));
    add(tr("Layers"), QString::number(network->layers().size()));
    add(tr("Parameters"), QStringLiteral("%1 (%2)").arg(formatCount(network->parameterCount()),
                                                        formatBytes(network->parameterBytes())));
    for (const auto& [key, value] : info.metadata) add(QString::fromStdString(key), QString::fromStdString(value));
    add(tr("Description"), QString::fromStdString(info.docString));
  }
  endResetModel();
}

int ModelPropertiesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(rows_.size());
}

int ModelPropertiesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant ModelPropertiesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  const auto& row = rows_[size_t(index.row())];
  return index.column() == kProperty ? row.first : row.second;
}

QVariant ModelPropertiesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == kProperty ? tr("Property") : tr("Value");
}

}  // namespace kiln::views
