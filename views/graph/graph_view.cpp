#include "graph/graph_view.h"

#include "graph/graph_scene.h"
#include "graph/node_item.h"

#include "common/heat_scale.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace kiln::views {
namespace {

constexpr double kMinZoom = 0.02;
constexpr double kMaxZoom = 4.0;
constexpr double kZoomStep = 1.25;
constexpr double kReadableZoom = 0.9;  // focusOn zooms in at least this far

}  // namespace

GraphView::GraphView(GraphScene* scene, QWidget* parent) : QGraphicsView(scene, parent) {
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing | QPainter::SmoothPixmapTransform);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setOptimizationFlags(QGraphicsView::DontSavePainterState);
  setFrameShape(QFrame::NoFrame);
  connect(scene, &GraphScene::focusRequested, this, &GraphView::focusOn);
  connect(scene, &GraphScene::heatmapChanged, viewport(), qOverload<>(&QWidget::update));
}

void GraphView::drawForeground(QPainter* painter, const QRectF&) {
  const auto* graph = static_cast<const GraphScene*>(scene());
  if (!graph || !graph->hasHeatmap()) return;
  painter->save();
  painter->resetTransform();
  painter->setRenderHint(QPainter::Antialiasing);
  QFont font = graph_style::textFont();
  font.setBold(true);
  // As wide as its title (which names the metric and its unit), within the view.
  const double titleWidth = QFontMetricsF(font).horizontalAdvance(graph->heatmapTitle()) + 20;
  const double width = std::clamp(titleWidth, 230.0, std::max(230.0, viewport()->width() - 24.0));
  const QRectF panel(12, viewport()->height() - 62, width, 50);
  painter->setPen(QPen(QColor(0xD1, 0xD5, 0xDB), 1));
  painter->setBrush(QColor(255, 255, 255, 235));
  painter->drawRoundedRect(panel, 6, 6);
  painter->setFont(font);
  painter->setPen(QColor(0x1F, 0x29, 0x37));
  painter->drawText(panel.adjusted(10, 4, -10, 0), Qt::AlignLeft | Qt::AlignTop, graph->heatmapTitle());
  const QRectF bar(panel.left() + 10, panel.top() + 22, panel.width() - 20, 10);
  if (!graph->heatmapCategories().empty()) {  // named colours: a swatch and its name each
    painter->setFont(graph_style::labelFont());
    double x = bar.left();
    for (const auto& [fraction, label] : graph->heatmapCategories()) {
      painter->setPen(Qt::NoPen);
      painter->setBrush(heatColor(fraction));
      painter->drawRoundedRect(QRectF(x, bar.top(), 14, 14), 3, 3);
      painter->setPen(QColor(0x37, 0x41, 0x51));
      const double width = QFontMetricsF(painter->font()).horizontalAdvance(label);
      painter->drawText(QRectF(x + 18, bar.top() - 1, width + 4, 16), Qt::AlignLeft | Qt::AlignVCenter, label);
      x += 18 + width + 16;
    }
    painter->restore();
    return;
  }
  painter->setPen(Qt::NoPen);
  painter->setBrush(heatGradient(bar.topLeft(), bar.topRight()));
  painter->drawRoundedRect(bar, 3, 3);
  painter->setFont(graph_style::labelFont());
  painter->setPen(QColor(0x6B, 0x72, 0x80));
  painter->drawText(QRectF(bar.left(), bar.bottom() + 1, bar.width(), 14), Qt::AlignLeft, tr("low"));
  painter->drawText(QRectF(bar.left(), bar.bottom() + 1, bar.width(), 14), Qt::AlignRight, tr("high"));
  painter->restore();
}

double GraphView::zoom() const { return transform().m11(); }

void GraphView::setZoom(double zoom) {
  const double clamped = std::clamp(zoom, kMinZoom, kMaxZoom);
  setTransform(QTransform::fromScale(clamped, clamped));
  emit visibleAreaChanged();
}

void GraphView::zoomIn() {
  const auto anchor = transformationAnchor();
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  setZoom(zoom() * kZoomStep);
  setTransformationAnchor(anchor);
}

void GraphView::zoomOut() {
  const auto anchor = transformationAnchor();
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  setZoom(zoom() / kZoomStep);
  setTransformationAnchor(anchor);
}

void GraphView::fitGraph() {
  if (!scene()) return;
  const QRectF area = scene()->sceneRect();
  if (area.isEmpty()) return;
  // A tall network fitted whole would be a thin unreadable strip: fit its width and show its top.
  const double fitAll = std::min(viewport()->width() / area.width(), viewport()->height() / area.height());
  const double fitWidth = std::min(1.0, viewport()->width() / area.width());
  const double target = std::clamp(std::max(fitAll, std::min(fitWidth, 0.35)), kMinZoom, 1.0);
  setTransform(QTransform::fromScale(target, target));
  centerOn(area.center().x(), area.top() + viewport()->height() / target / 2);
  if (fitAll >= target) centerOn(area.center());
  emit visibleAreaChanged();
}

void GraphView::focusOn(const QRectF& sceneRect) {
  if (zoom() < kReadableZoom) setZoom(kReadableZoom);
  centerOn(sceneRect.center());
  emit visibleAreaChanged();
}

void GraphView::wheelEvent(QWheelEvent* event) {
  // Shift+wheel scrolls; the plain wheel zooms around the cursor, as in Netron.
  if (event->modifiers() & Qt::ShiftModifier) {
    QGraphicsView::wheelEvent(event);
    return;
  }
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  setZoom(zoom() * std::pow(1.15, steps));
  event->accept();
}

void GraphView::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  emit visibleAreaChanged();
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  emit visibleAreaChanged();
}

Overview::Overview(GraphScene* scene, GraphView* mainView, QWidget* parent)
    : QGraphicsView(scene, parent), mainView_(mainView) {
  setInteractive(false);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setRenderHints(QPainter::Antialiasing);
  setFrameShape(QFrame::NoFrame);
  setCursor(Qt::PointingHandCursor);
  connect(mainView, &GraphView::visibleAreaChanged, viewport(), qOverload<>(&QWidget::update));
  connect(scene, &GraphScene::layoutFinished, this, &Overview::fitScene);
  connect(scene, &GraphScene::itemsRestyled, this, &Overview::redrawPicture);
  connect(scene, &GraphScene::heatmapChanged, this, &Overview::redrawPicture);  // also on a new model
  connect(scene, &QGraphicsScene::selectionChanged, this, &Overview::redrawPicture);
}

void Overview::fitScene() {
  if (scene() && !scene()->sceneRect().isEmpty()) fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
  redrawPicture();
}

void Overview::redrawPicture() {
  picture_ = QPixmap();
  viewport()->update();
}

void Overview::paintEvent(QPaintEvent*) {
  const QRect area = viewport()->rect();
  if (picture_.isNull() && scene()) {
    const qreal ratio = devicePixelRatioF();
    picture_ = QPixmap(area.size() * ratio);
    picture_.setDevicePixelRatio(ratio);
    QPainter painter(&picture_);
    painter.setRenderHints(renderHints());
    scene()->render(&painter, QRectF(area), mapToScene(area).boundingRect(), Qt::IgnoreAspectRatio);
  }
  QPainter painter(viewport());
  painter.drawPixmap(0, 0, picture_);
  painter.setTransform(viewportTransform());
  drawForeground(&painter, mapToScene(area).boundingRect());
}

void Overview::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  fitScene();
}

void Overview::wheelEvent(QWheelEvent* event) { event->ignore(); }

void Overview::drawForeground(QPainter* painter, const QRectF&) {
  const QRectF visible = mainView_->mapToScene(mainView_->viewport()->rect()).boundingRect();
  QColor fill = graph_style::selectionColor();
  fill.setAlpha(40);
  painter->setBrush(fill);
  painter->setPen(QPen(graph_style::selectionColor(), 0));  // cosmetic: one pixel at any scale
  painter->drawRect(visible.intersected(sceneRect()));
}

void Overview::mousePressEvent(QMouseEvent* event) {
  mainView_->centerOn(mapToScene(event->position().toPoint()));
}

void Overview::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) mainView_->centerOn(mapToScene(event->position().toPoint()));
}

}  // namespace kiln::views
