#include "graph/graph_scene.h"

#include "common/op_category.h"
#include "common/value_format.h"
#include "graph/edge_item.h"
#include "graph/node_item.h"

#include <kiln/error.h>

#include <QGraphicsSceneMouseEvent>
#include <QPromise>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <limits>
#include <map>

namespace kiln::views {
namespace {

constexpr int kMaxAttributeRows = 4;
constexpr int kMaxGroupSummaryRows = 4;
constexpr double kSceneMargin = 40;

// The part of a layer's name below its group's path ("/layer1/0/conv1/Conv" in "/layer1/0" →
// "conv1/Conv"): the group frame already says the rest.
QString shortName(const GraphStructure& structure, const GraphNode& node) {
  std::string name = node.name;
  for (int g = node.group; g >= 0; g = structure.groups()[g].parent) {
    const GraphGroup& group = structure.groups()[g];
    if (group.kind == GroupKind::kNamePrefix && name.rfind(group.path + "/", 0) == 0) {
      name = name.substr(group.path.size() + 1);
      break;
    }
  }
  return QString::fromStdString(name);
}

}  // namespace

GraphScene::GraphScene(QObject* parent) : QGraphicsScene(parent) {
  setBackgroundBrush(graph_style::background());
  // Items are replaced wholesale after each layout; an index would only be rebuilt each time.
  setItemIndexMethod(QGraphicsScene::NoIndex);
  connect(this, &QGraphicsScene::selectionChanged, this, &GraphScene::selectionTargetChanged);
}

GraphScene::~GraphScene() {
  stopWorker();
  // Items must go while the structure they refer to still exists, without selection signals.
  blockSignals(true);
  clear();
}

void GraphScene::setNetwork(std::shared_ptr<const Network> network) {
  QElapsedTimer structureTimer;
  structureTimer.start();
  stopWorker();
  clear();
  nodeItems_.clear();
  edgeItems_.clear();
  clusterItems_.clear();
  visible_ = {};
  network_ = std::move(network);
  structure_ = GraphStructure(network_);
  collapsed_ = defaultCollapsedGroups(structure_, kMaxInitialItems);
  pendingReveal_ = -1;
  keepSelectedNode_ = -1;
  nodeByName_.clear();
  for (size_t n = 0; n < structure_.nodes().size(); ++n)
    if (structure_.nodes()[n].kind == NodeKind::kLayer) nodeByName_.emplace(structure_.nodes()[n].name, int(n));
  heat_.clear();
  heatmapTitle_.clear();
  highlighted_.clear();
  emit heatmapChanged();
  if (network_) startLayout(double(structureTimer.nsecsElapsed()) * 1e-9);
}

void GraphScene::setGroupCollapsed(int group, bool collapsed) {
  if (group < 0 || group >= int(collapsed_.size()) || collapsed_[size_t(group)] == collapsed) return;
  collapsed_[size_t(group)] = collapsed;
  startLayout();
}

void GraphScene::setAllGroupsCollapsed(bool collapsed) {
  if (collapsed_.empty()) return;
  std::fill(collapsed_.begin(), collapsed_.end(), collapsed);
  startLayout();
}

bool GraphScene::isLayoutRunning() const { return watcher_ && !watcher_->isFinished(); }

bool GraphScene::stopWorker() {
  if (!watcher_) return false;
  // The worker owns copies of its inputs; an abandoned layout just finishes unseen.
  watcher_->disconnect(this);
  watcher_->cancel();
  const bool wasRunning = !watcher_->isFinished();
  watcher_.reset();
  pendingItems_.clear();
  return wasRunning;
}

void GraphScene::cancelLayout() {
  pendingReveal_ = -1;
  if (stopWorker()) emit layoutCancelled();
}

NodeContent GraphScene::contentForNode(int index) const {
  const GraphNode& node = structure_.nodes()[size_t(index)];
  NodeContent content;
  if (node.kind != NodeKind::kLayer) {
    content.style = NodeContent::Style::kTerminal;
    content.title = QString::fromStdString(node.name);
    const Tensor* tensor = node.network->findTensor(node.name);
    content.subtitle = tensor ? formatTensorType(*tensor) : QString();
    return content;
  }
  const Layer& layer = *node.layer;
  content.accent = categoryColor(opCategory(layer.opType));
  content.title = QString::fromStdString(layer.opType);
  content.subtitle = shortName(structure_, node);
  for (size_t i = 0; i < layer.inputs.size(); ++i) {
    const Tensor* tensor = layer.inputs[i].empty() ? nullptr : node.network->findTensor(layer.inputs[i]);
    if (tensor && tensor->isConstant())
      content.rows.push_back({inputRoleName(layer, i), QStringLiteral("⟨%1⟩").arg(formatDims(tensor->constant->dims())),
                              true});
  }
  int attributeRows = 0;
  for (const auto& [name, attribute] : layer.attributes) {
    const bool isTensor = attribute.get<HostTensor>() != nullptr;
    if (!isTensor && attributeRows++ >= kMaxAttributeRows) continue;
    content.rows.push_back({QString::fromStdString(name), formatAttribute(attribute, 6), isTensor});
  }
  return content;
}

NodeContent GraphScene::contentForGroup(int index) const {
  const GraphGroup& group = structure_.groups()[size_t(index)];
  NodeContent content;
  content.style = NodeContent::Style::kGroup;
  content.title = QString::fromStdString(group.title);
  content.subtitle = tr("%n layer(s)", nullptr, group.nodeCount);
  std::map<std::string, int> opCounts;
  std::vector<int> categoryCounts(kOpCategoryCount, 0);
  for (size_t n = 0; n < structure_.nodes().size(); ++n) {
    const GraphNode& node = structure_.nodes()[n];
    if (!node.layer || !structure_.isInGroup(int(n), index)) continue;
    ++opCounts[node.layer->opType];
    ++categoryCounts[size_t(opCategory(node.layer->opType))];
  }
  const auto dominant = std::max_element(categoryCounts.begin(), categoryCounts.end()) - categoryCounts.begin();
  content.accent = group.kind == GroupKind::kSubgraph ? categoryColor(OpCategory::kControlFlow)
                                                      : categoryColor(OpCategory(dominant));
  std::vector<std::pair<int, std::string>> byCount;
  for (const auto& [op, count] : opCounts) byCount.emplace_back(-count, op);
  std::sort(byCount.begin(), byCount.end());
  for (size_t i = 0; i < byCount.size() && int(i) < kMaxGroupSummaryRows; ++i)
    content.rows.push_back({QString::fromStdString(byCount[i].second), QStringLiteral("× %1").arg(-byCount[i].first)});
  if (int(byCount.size()) > kMaxGroupSummaryRows)
    content.rows.push_back({QStringLiteral("…"), tr("%n more op type(s)", nullptr, int(byCount.size()) - kMaxGroupSummaryRows)});
  return content;
}

const Tensor* GraphScene::tensorOfEdge(int structureEdge) const {
  const GraphEdge& edge = structure_.edges()[size_t(structureEdge)];
  return structure_.nodes()[size_t(edge.from)].network->findTensor(edge.tensor);
}

QString GraphScene::edgeLabel(const VisibleGraph::Edge& edge) const {
  const Tensor* tensor = tensorOfEdge(edge.sourceEdges.front());
  QString label = tensor && tensor->shape.hasRank() ? formatShape(tensor->shape) : QString();
  if (edge.sourceEdges.size() > 1) label += QStringLiteral(" (+%1)").arg(edge.sourceEdges.size() - 1);
  return label;
}

void GraphScene::startLayout(double structureSeconds) {
  QElapsedTimer structureTimer;
  structureTimer.start();
  stopWorker();
  keepSelectedNode_ = pendingReveal_ >= 0 ? pendingReveal_ : selectedNode();
  pendingVisible_ = makeVisibleGraph(structure_, collapsed_);
  LayoutGraph graph;
  graph.nodes.reserve(pendingVisible_.items.size());
  pendingItems_.reserve(pendingVisible_.items.size());
  for (const auto& item : pendingVisible_.items) {
    NodeContent content = item.isGroup ? contentForGroup(item.index) : contentForNode(item.index);
    pendingItems_.push_back(std::make_unique<NodeItem>(std::move(content), item.index, item.isGroup));
    graph.nodes.push_back({pendingItems_.back()->size(), item.cluster});
  }
  for (const auto& edge : pendingVisible_.edges) graph.edges.push_back({edge.from, edge.to});
  for (int parent : pendingVisible_.clusterParent) graph.clusters.push_back({parent, ClusterItem::titleHeight()});

  pendingTimings_ = {structureSeconds + double(structureTimer.nsecsElapsed()) * 1e-9, 0, 0};
  emit layoutStarted(int(graph.nodes.size()));
  layoutTimer_.start();
  watcher_ = std::make_unique<QFutureWatcher<LayoutOutcome>>();
  connect(watcher_.get(), &QFutureWatcherBase::progressValueChanged, this,
          [this](int value) { emit layoutProgress(value, watcher_->progressText()); });
  connect(watcher_.get(), &QFutureWatcherBase::finished, this, [this] {
    if (!watcher_->future().isValid() || watcher_->future().resultCount() == 0) return;
    applyLayout(watcher_->result());
  });
  watcher_->setFuture(QtConcurrent::run([graph = std::move(graph)](QPromise<LayoutOutcome>& promise) {
    promise.setProgressRange(0, 100);
    QElapsedTimer layoutTimer;
    layoutTimer.start();
    LayoutOutcome outcome;
    try {
      outcome.result = layoutGraph(graph, {}, [&promise](double fraction, const char* phase) {
        promise.setProgressValueAndText(int(fraction * 100), QString::fromUtf8(phase));
        return !promise.isCanceled();
      });
    } catch (const Error& e) {
      outcome.cancelled = e.code() == ErrorCode::kCancelled;
      outcome.error = QString::fromUtf8(e.what());
    }
    outcome.seconds = double(layoutTimer.nsecsElapsed()) * 1e-9;
    promise.addResult(std::move(outcome));
  }));
}

void GraphScene::applyLayout(LayoutOutcome outcome) {
  watcher_.reset();
  if (outcome.cancelled) {
    pendingItems_.clear();
    emit layoutCancelled();
    return;
  }
  if (!outcome.error.isEmpty()) {
    pendingItems_.clear();
    emit layoutFailed(outcome.error);
    return;
  }
  QElapsedTimer sceneTimer;
  sceneTimer.start();
  const LayoutResult& layout = outcome.result;
  blockSignals(true);  // one selection signal after the swap, not one per removed item
  clear();
  nodeItems_.clear();
  edgeItems_.clear();
  clusterItems_.clear();
  visible_ = std::move(pendingVisible_);
  for (size_t c = 0; c < visible_.clusters.size(); ++c) {
    const int group = visible_.clusters[c];
    auto* cluster = new ClusterItem(group, QString::fromStdString(structure_.groups()[size_t(group)].title),
                                    layout.clusterRects[c], structure_.groups()[size_t(group)].depth);
    addItem(cluster);
    clusterItems_.push_back(cluster);
  }
  for (size_t i = 0; i < pendingItems_.size(); ++i) {
    NodeItem* item = pendingItems_[i].release();
    item->setPos(layout.nodeCenters[i]);
    addItem(item);
    nodeItems_.push_back(item);
  }
  pendingItems_.clear();
  for (size_t e = 0; e < visible_.edges.size(); ++e) {
    const auto& edge = visible_.edges[e];
    QStringList tensors;
    for (int source : edge.sourceEdges) tensors << QString::fromStdString(structure_.edges()[size_t(source)].tensor);
    auto* item = new EdgeItem(layout.edges[e], edgeLabel(edge), tensors.join(QChar('\n')));
    addItem(item);
    edgeItems_.push_back(item);
  }
  setSceneRect(layout.bounds.adjusted(-kSceneMargin, -kSceneMargin, kSceneMargin, kSceneMargin));
  layoutMethod_ = QString::fromStdString(layout.method);
  decorateItems();
  blockSignals(false);

  const int reveal = pendingReveal_ >= 0 ? pendingReveal_ : keepSelectedNode_;
  pendingReveal_ = -1;
  if (NodeItem* item = reveal >= 0 ? itemShowing(reveal) : nullptr) {
    item->setSelected(true);
    emit focusRequested(item->sceneBoundingRect());
  }
  emit selectionTargetChanged();
  timings_ = pendingTimings_;
  timings_.layout = outcome.seconds;
  timings_.scene = double(sceneTimer.nsecsElapsed()) * 1e-9;
  emit layoutFinished(double(layoutTimer_.elapsed()) / 1000.0);
}

NodeItem* GraphScene::itemShowing(int node) const {
  if (node < 0 || size_t(node) >= visible_.itemOfNode.size()) return nullptr;
  const int item = visible_.itemOfNode[size_t(node)];
  return item < int(nodeItems_.size()) ? nodeItems_[size_t(item)] : nullptr;
}

void GraphScene::revealNode(int node) {
  if (node < 0 || size_t(node) >= structure_.nodes().size()) return;
  bool expanded = false;
  for (int g = structure_.nodes()[size_t(node)].group; g >= 0; g = structure_.groups()[size_t(g)].parent) {
    if (collapsed_[size_t(g)]) expanded = true;
    collapsed_[size_t(g)] = false;
  }
  if (expanded || isLayoutRunning()) {
    pendingReveal_ = node;
    startLayout();
    return;
  }
  clearSelection();
  if (NodeItem* item = itemShowing(node)) {
    item->setSelected(true);
    emit focusRequested(item->sceneBoundingRect());
  }
}

int GraphScene::selectedNode() const {
  for (QGraphicsItem* item : selectedItems())
    if (item->type() == NodeItem::Type && !static_cast<NodeItem*>(item)->isGroup())
      return static_cast<NodeItem*>(item)->index();
  return -1;
}

int GraphScene::selectedGroup() const {
  for (QGraphicsItem* item : selectedItems())
    if (item->type() == NodeItem::Type && static_cast<NodeItem*>(item)->isGroup())
      return static_cast<NodeItem*>(item)->index();
  return -1;
}

int GraphScene::nodeNamed(const std::string& name) const {
  const auto it = nodeByName_.find(name);
  return it == nodeByName_.end() ? -1 : it->second;
}

void GraphScene::setHeatmap(const QString& title, std::map<int, NodeHeat> heat,
                            std::vector<std::pair<double, QString>> categories) {
  heatmapTitle_ = heat.empty() ? QString() : title;
  heatCategories_ = heat.empty() ? std::vector<std::pair<double, QString>>{} : std::move(categories);
  heat_ = std::move(heat);
  decorateItems();
  emit heatmapChanged();
}

void GraphScene::setHighlightedNodes(std::set<int> nodes) {
  highlighted_ = std::move(nodes);
  decorateItems();
}

void GraphScene::decorateItems() {
  const double none = std::numeric_limits<double>::quiet_NaN();
  for (NodeItem* item : nodeItems_) {
    if (!item->isGroup()) {
      const auto heat = heat_.find(item->index());
      const bool heated = heat != heat_.end();
      item->setHeat(heated ? heat->second.fraction : none, heated ? heat->second.label : QString());
      item->setDimmed(!heat_.empty() && !heated && structure_.nodes()[size_t(item->index())].kind == NodeKind::kLayer);
      item->setHighlighted(highlighted_.count(item->index()) > 0);
      continue;
    }
    // A collapsed group stands for its members: their hottest value, highlighted when any is.
    const NodeHeat* hottest = nullptr;
    for (const auto& [node, heat] : heat_)
      if (structure_.isInGroup(node, item->index()) && (!hottest || heat.fraction > hottest->fraction)) hottest = &heat;
    item->setHeat(hottest ? hottest->fraction : none, hottest ? hottest->label : QString());
    item->setDimmed(!heat_.empty() && !hottest);
    item->setHighlighted(std::any_of(highlighted_.begin(), highlighted_.end(),
                                     [&](int node) { return structure_.isInGroup(node, item->index()); }));
  }
  emit itemsRestyled();
}

void GraphScene::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  for (QGraphicsItem* item : items(event->scenePos())) {
    if (item->type() == NodeItem::Type) {
      auto* node = static_cast<NodeItem*>(item);
      if (node->isGroup()) setGroupCollapsed(node->index(), false);
      event->accept();
      return;
    }
    if (item->type() == ClusterItem::Type) {
      auto* cluster = static_cast<ClusterItem*>(item);
      if (cluster->titleRect().contains(event->scenePos())) {
        setGroupCollapsed(cluster->group(), true);
        event->accept();
        return;
      }
    }
  }
  QGraphicsScene::mouseDoubleClickEvent(event);
}

}  // namespace kiln::views
