#pragma once
// The graph of one model as a QGraphicsScene. Build → measure → layout (worker thread) → update,
// as Netron's grapher does: items are measured on the UI thread, Graphviz runs in the background
// (cancellable, with progress), and the scene swaps to the new items when the layout is done.
#include "graph/graph_layout.h"
#include "graph/graph_structure.h"

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QGraphicsScene>

#include <map>
#include <memory>
#include <set>

namespace kiln::views {

class NodeItem;
class EdgeItem;
class ClusterItem;
struct NodeContent;

class GraphScene : public QGraphicsScene {
  Q_OBJECT
 public:
  // Larger graphs open with their deepest blocks collapsed (expand them by double-click): a
  // 5,000-layer ResNet then shows ~700 blocks, laid out in well under a second.
  static constexpr int kMaxInitialItems = 2000;

  explicit GraphScene(QObject* parent = nullptr);
  ~GraphScene() override;

  // Shows `network` (nullptr clears) and starts laying it out.
  void setNetwork(std::shared_ptr<const Network> network);
  const GraphStructure& structure() const { return structure_; }
  const VisibleGraph& visibleGraph() const { return visible_; }

  bool isGroupCollapsed(int group) const { return collapsed_.at(size_t(group)); }
  void setGroupCollapsed(int group, bool collapsed);
  void setAllGroupsCollapsed(bool collapsed);

  bool isLayoutRunning() const;
  void cancelLayout();
  QString layoutMethod() const { return layoutMethod_; }

  // Where the last finished layout's time went, in seconds of wall time.
  struct LayoutTimings {
    double structure = 0;  // UI thread: the model's groups (on open), the visible graph, measuring boxes
    double layout = 0;     // worker thread: Graphviz
    double scene = 0;      // UI thread: creating the scene's items
  };
  const LayoutTimings& layoutTimings() const { return timings_; }

  // Items of the current layout.
  const std::vector<NodeItem*>& nodeItems() const { return nodeItems_; }
  const std::vector<EdgeItem*>& edgeItems() const { return edgeItems_; }
  const std::vector<ClusterItem*>& clusterItems() const { return clusterItems_; }
  // The item showing structure node `node` (the group's item when it is collapsed), or nullptr.
  NodeItem* itemShowing(int node) const;

  // Selects `node`, expanding the groups hiding it first (after the new layout), and asks the
  // views to bring it into sight.
  void revealNode(int node);
  int selectedNode() const;   // -1 when no layer/input/output is selected
  int selectedGroup() const;  // -1 when no collapsed group is selected

  // Structure node of the layer named `name` (an ONNX node name), or -1.
  int nodeNamed(const std::string& name) const;

  // Colours nodes by a value (fraction in [0, 1] and a badge label), e.g. layer time or error;
  // a collapsed group shows its hottest member. An empty map clears the heatmap.
  struct NodeHeat {
    double fraction = 0;
    QString label;
  };
  // `categories`: named colours (fraction, label) for the legend instead of a low-high scale.
  void setHeatmap(const QString& title, std::map<int, NodeHeat> heat,
                  std::vector<std::pair<double, QString>> categories = {});
  const QString& heatmapTitle() const { return heatmapTitle_; }
  const std::vector<std::pair<double, QString>>& heatmapCategories() const { return heatCategories_; }
  bool hasHeatmap() const { return !heat_.empty(); }
  const std::map<int, NodeHeat>& heatmap() const { return heat_; }

  // Outlines nodes (the ONNX nodes fused into the engine layer selected elsewhere).
  void setHighlightedNodes(std::set<int> nodes);
  const std::set<int>& highlightedNodes() const { return highlighted_; }

 signals:
  void layoutStarted(int itemCount);
  void layoutProgress(int percent, const QString& phase);
  void layoutFinished(double seconds);
  void layoutFailed(const QString& message);
  void layoutCancelled();
  void selectionTargetChanged();
  void focusRequested(const QRectF& sceneRect);
  void heatmapChanged();
  // Items were recoloured, dimmed or outlined (heatmap, highlighted nodes).
  void itemsRestyled();

 protected:
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  struct LayoutOutcome {
    LayoutResult result;
    QString error;
    bool cancelled = false;
    double seconds = 0;
  };
  // `structureSeconds`: time already spent preparing this layout (building the structure on open).
  void startLayout(double structureSeconds = 0);
  bool stopWorker();  // true when a layout was still running
  void applyLayout(LayoutOutcome outcome);
  NodeContent contentForNode(int node) const;
  NodeContent contentForGroup(int group) const;
  QString edgeLabel(const VisibleGraph::Edge& edge) const;
  const Tensor* tensorOfEdge(int structureEdge) const;
  void decorateItems();

  std::shared_ptr<const Network> network_;
  GraphStructure structure_;
  std::vector<bool> collapsed_;
  VisibleGraph visible_;         // what the scene shows now
  VisibleGraph pendingVisible_;  // what the running layout is for
  std::vector<std::unique_ptr<NodeItem>> pendingItems_;  // measured, waiting for their layout
  std::vector<NodeItem*> nodeItems_;
  std::vector<EdgeItem*> edgeItems_;
  std::vector<ClusterItem*> clusterItems_;
  std::unique_ptr<QFutureWatcher<LayoutOutcome>> watcher_;
  QElapsedTimer layoutTimer_;
  LayoutTimings timings_;
  LayoutTimings pendingTimings_;
  QString layoutMethod_;
  int pendingReveal_ = -1;
  int keepSelectedNode_ = -1;
  std::map<std::string, int> nodeByName_;
  QString heatmapTitle_;
  std::map<int, NodeHeat> heat_;
  std::vector<std::pair<double, QString>> heatCategories_;
  std::set<int> highlighted_;
};

}  // namespace kiln::views
