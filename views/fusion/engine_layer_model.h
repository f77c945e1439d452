#pragma once
// The engine's layers as a table: name, type, precision, tactic and the ONNX nodes fused into each.
#include <kiln/build_report.h>

#include <QAbstractTableModel>

namespace kiln::views {

class EngineLayerModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kName, kType, kPrecision, kTactic, kOrigins, kColumnCount };
  using QAbstractTableModel::QAbstractTableModel;

  void setLayers(std::vector<LayerSummary> layers);
  const std::vector<LayerSummary>& layers() const { return layers_; }
  int rowOfLayer(const std::string& name) const;  // -1 when absent

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<LayerSummary> layers_;
};

}  // namespace kiln::views
