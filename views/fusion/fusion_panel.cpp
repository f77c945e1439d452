#include "fusion/fusion_panel.h"

#include "common/value_format.h"
#include "fusion/engine_layer_model.h"
#include "fusion/pass_model.h"
#include "graph/graph_scene.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QTreeView>
#include <QVBoxLayout>

namespace kiln::views {

FusionPanel::FusionPanel(QWidget* parent) : QWidget(parent) {
  layers_ = new EngineLayerModel(this);
  passes_ = new PassModel(this);
  summary_ = new QLabel(tr("Build an engine (Build ▸ Build Engine) to see how its layers map to the model."), this);
  summary_->setWordWrap(true);
  summary_->setTextFormat(Qt::RichText);

  layerTable_ = new QTableView(this);
  layerTable_->setModel(layers_);
  layerTable_->setSelectionBehavior(QAbstractItemView::SelectRows);
  layerTable_->setSelectionMode(QAbstractItemView::SingleSelection);
  layerTable_->setAlternatingRowColors(true);
  layerTable_->setWordWrap(false);
  layerTable_->verticalHeader()->setDefaultSectionSize(22);
  layerTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  layerTable_->horizontalHeader()->setStretchLastSection(true);
  layerTable_->setColumnWidth(EngineLayerModel::kName, 200);
  layerTable_->setColumnWidth(EngineLayerModel::kType, 140);
  layerTable_->setColumnWidth(EngineLayerModel::kPrecision, 70);
  layerTable_->setColumnWidth(EngineLayerModel::kTactic, 190);

  passTree_ = new QTreeView(this);
  passTree_->setModel(passes_);
  passTree_->setAlternatingRowColors(true);
  passTree_->setUniformRowHeights(true);
  passTree_->header()->setStretchLastSection(false);
  passTree_->header()->setSectionResizeMode(PassModel::kPass, QHeaderView::Stretch);
  for (int column : {PassModel::kLayers, PassModel::kChange, PassModel::kTime})
    passTree_->header()->setSectionResizeMode(column, QHeaderView::ResizeToContents);

  results_ = new QSplitter(Qt::Horizontal, this);
  results_->addWidget(layerTable_);
  results_->addWidget(passTree_);
  results_->setStretchFactor(0, 3);
  results_->setStretchFactor(1, 2);
  results_->hide();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(summary_);
  layout->addWidget(results_, 1);
  layout->addStretch();  // keeps the summary at the top while the results are hidden

  connect(layerTable_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &FusionPanel::showLayerInGraph);
}

void FusionPanel::setScene(GraphScene* scene) {
  if (scene_) scene_->disconnect(this);
  scene_ = scene;
  if (scene_) connect(scene_, &GraphScene::selectionTargetChanged, this, &FusionPanel::followGraphSelection);
}

void FusionPanel::setReport(const BuildReport& report) {
  report_ = report;
  hasReport_ = true;
  origins_ = scene_ ? OriginMap(report_.layers, scene_->structure()) : OriginMap();
  layers_->setLayers(report_.layers);
  passes_->setPasses(report_.passes);
  passTree_->expandAll();
  results_->show();
  int fused = 0;
  for (const auto& layer : report_.layers) fused += layer.origins.size() > 1;
  summary_->setText(tr("<b>%1 ONNX nodes → %2 engine layers</b> (%3 fused) · %4 backend · weights %5 · "
                       "activations %6 (%7 without sharing) · built in %8 s")
                        .arg(report_.onnxNodeCount)
                        .arg(report_.layers.size())
                        .arg(fused)
                        .arg(QString::fromStdString(report_.backend).toUpper())
                        .arg(formatBytes(report_.weightBytes), formatBytes(report_.peakActivationBytes),
                             formatBytes(report_.naiveActivationBytes))
                        .arg(report_.buildMilliseconds / 1000.0, 0, 'f', 2));
}

void FusionPanel::clear() {
  report_ = {};
  hasReport_ = false;
  origins_ = {};
  layers_->setLayers({});
  passes_->setPasses({});
  results_->hide();
  summary_->setText(tr("Build an engine (Build ▸ Build Engine) to see how its layers map to the model."));
  if (scene_) scene_->setHighlightedNodes({});
}

int FusionPanel::selectedLayer() const {
  const QModelIndexList rows = layerTable_->selectionModel()->selectedRows();
  return rows.isEmpty() ? -1 : rows.front().row();
}

void FusionPanel::selectLayer(int row) {
  if (row < 0 || row >= layers_->rowCount()) {
    layerTable_->clearSelection();
    return;
  }
  layerTable_->selectRow(row);
  layerTable_->scrollTo(layers_->index(row, 0));
}

void FusionPanel::showLayerInGraph() {
  const int row = selectedLayer();
  emit layerSelected(row);
  if (!scene_ || syncing_) return;
  const std::vector<int> nodes = row < 0 ? std::vector<int>{} : origins_.nodesOfLayer(layers_->layers()[size_t(row)].name);
  syncing_ = true;
  scene_->setHighlightedNodes({nodes.begin(), nodes.end()});
  if (!nodes.empty()) scene_->revealNode(nodes.front());
  syncing_ = false;
}

void FusionPanel::followGraphSelection() {
  if (!scene_ || syncing_ || !hasReport_) return;
  const int node = scene_->selectedNode();
  if (node < 0) return;  // keep the engine layer while the user clicks on empty space
  const int row = origins_.layerOfNode(node);
  syncing_ = true;
  selectLayer(row);
  const std::vector<int> nodes = row < 0 ? std::vector<int>{} : origins_.nodesOfLayer(layers_->layers()[size_t(row)].name);
  scene_->setHighlightedNodes({nodes.begin(), nodes.end()});
  syncing_ = false;
}

}  // namespace kiln::views
