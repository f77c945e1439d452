#pragma once
// The fusion view: the engine's layers beside the ONNX graph, and the passes that made them.
// Selecting an engine layer outlines the ONNX nodes fused into it in the graph (and brings the
// first into view); selecting a graph node selects the engine layer it ended up in.
#include "fusion/origin_map.h"

#include <kiln/build_report.h>

#include <QWidget>

class QLabel;
class QSplitter;
class QTableView;
class QTreeView;

namespace kiln::views {

class EngineLayerModel;
class GraphScene;
class PassModel;

class FusionPanel : public QWidget {
  Q_OBJECT
 public:
  explicit FusionPanel(QWidget* parent = nullptr);

  void setScene(GraphScene* scene);
  void setReport(const BuildReport& report);  // against the scene's current graph
  void clear();
  bool hasReport() const { return hasReport_; }
  const BuildReport& report() const { return report_; }
  const OriginMap& origins() const { return origins_; }

  void selectLayer(int row);  // -1 clears
  int selectedLayer() const;  // -1 when none
  EngineLayerModel* layerModel() const { return layers_; }
  PassModel* passModel() const { return passes_; }
  QTableView* layerTable() const { return layerTable_; }

 signals:
  void layerSelected(int row);

 private:
  void showLayerInGraph();
  void followGraphSelection();

  GraphScene* scene_ = nullptr;
  BuildReport report_;
  bool hasReport_ = false;
  OriginMap origins_;
  bool syncing_ = false;  // set while one side updates the other, so neither echoes back
  EngineLayerModel* layers_;
  PassModel* passes_;
  QTableView* layerTable_;
  QTreeView* passTree_;
  QSplitter* results_;  // layers and passes, hidden until there is a build
  QLabel* summary_;
};

}  // namespace kiln::views
