#pragma once
// The graph's main view: zoom (wheel, Ctrl+=/Ctrl+-), pan (drag), fit (Ctrl+0), and the mini-map
// (Overview) that shows and moves the visible part.
#include <QGraphicsView>
#include <QPixmap>

namespace kiln::views {

class GraphScene;

class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit GraphView(GraphScene* scene, QWidget* parent = nullptr);

  double zoom() const;
  void setZoom(double zoom);  // 1 = 100%; clamped to [0.02, 4]
  void zoomIn();
  void zoomOut();
  void fitGraph();
  void focusOn(const QRectF& sceneRect);  // centres the rect, zooming in to a readable size

 signals:
  void visibleAreaChanged();

 protected:
  // The heatmap's legend, pinned to the bottom-left corner of the view.
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  void wheelEvent(QWheelEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;
  void resizeEvent(QResizeEvent* event) override;
};

// A small, non-interactive view of the whole graph with the main view's area outlined; click or
// drag to move there.
class Overview : public QGraphicsView {
  Q_OBJECT
 public:
  Overview(GraphScene* scene, GraphView* mainView, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {260, 220}; }

 protected:
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void paintEvent(QPaintEvent* event) override;

 private:
  void fitScene();
  void redrawPicture();
  GraphView* mainView_;
  // The whole graph as drawn here, kept until the graph changes: scrolling the main view only
  // moves the frame (repainting 5,000 boxes and their edges took ~27 ms a scroll step).
  QPixmap picture_;
};

}  // namespace kiln::views
