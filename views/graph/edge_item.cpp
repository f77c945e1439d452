#include "graph/edge_item.h"

#include "graph/graph_layout.h"
#include "graph/node_item.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPathStroker>
#include <QStyleOptionGraphicsItem>

#include <cmath>

namespace kiln::views {
namespace {

constexpr double kArrowLength = 7;
constexpr double kArrowHalfWidth = 3.5;
constexpr double kLabelZoom = 0.5;  // labels are unreadable below this zoom; skip them

QPainterPath pathOf(const EdgeRoute& route) {
  QPainterPath path;
  if (route.bezier.empty()) return path;
  path.moveTo(route.bezier[0]);
  for (size_t i = 1; i + 2 < route.bezier.size(); i += 3)
    path.cubicTo(route.bezier[i], route.bezier[i + 1], route.bezier[i + 2]);
  return path;
}

QPolygonF arrowHead(QPointF base, QPointF tip) {
  QPointF direction = tip - base;
  double length = std::hypot(direction.x(), direction.y());
  if (length < 1e-6) direction = QPointF(0, 1), length = 1;
  const QPointF unit = direction / length;
  const QPointF back = tip - unit * kArrowLength;
  const QPointF normal(-unit.y(), unit.x());
  return QPolygonF({tip, back + normal * kArrowHalfWidth, back - normal * kArrowHalfWidth});
}

}  // namespace

EdgeItem::EdgeItem(const EdgeRoute& route, QString label, QString toolTip)
    : path_(pathOf(route)), label_(std::move(label)) {
  setZValue(1);
  setToolTip(toolTip);
  if (!route.bezier.empty()) arrow_ = arrowHead(route.bezier.back(), route.arrowTip);
  bounds_ = path_.boundingRect().united(arrow_.boundingRect());
  if (!label_.isEmpty() && !path_.isEmpty()) {
    const QFontMetricsF metrics(graph_style::labelFont());
    const QPointF middle = route.labelAt;
    const QSizeF size(metrics.horizontalAdvance(label_) + 6, metrics.height() + 2);
    labelRect_ = QRectF(middle + QPointF(4, -size.height() / 2), size);
    bounds_ = bounds_.united(labelRect_);
  }
  bounds_.adjust(-2, -2, 2, 2);
}

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(6);
  return stroker.createStroke(path_);
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing);
  const QColor color = graph_style::edgeColor();
  painter->setPen(QPen(color, 1.2));
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(path_);
  painter->setPen(Qt::NoPen);
  painter->setBrush(color);
  painter->drawPolygon(arrow_);
  if (labelRect_.isNull() || option->levelOfDetailFromTransform(painter->worldTransform()) < kLabelZoom) return;
  painter->setBrush(QColor(0xF6, 0xF7, 0xF9, 220));
  painter->drawRoundedRect(labelRect_, 3, 3);
  painter->setPen(QColor(0x55, 0x5E, 0x6B));
  painter->setFont(graph_style::labelFont());
  painter->drawText(labelRect_, Qt::AlignCenter, label_);
}

}  // namespace kiln::views
