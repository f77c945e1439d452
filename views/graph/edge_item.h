#pragma once
// An edge of the graph: the spline Graphviz routed, an arrow head, and the tensor's shape as label.
#include <QGraphicsItem>
#include <QPainterPath>
#include <QPolygonF>

namespace kiln::views {

struct EdgeRoute;

class EdgeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  EdgeItem(const EdgeRoute& route, QString label, QString toolTip);

  int type() const override { return Type; }
  const QPainterPath& path() const { return path_; }
  const QString& label() const { return label_; }
  QRectF boundingRect() const override { return bounds_; }
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QPainterPath path_;
  QPolygonF arrow_;
  QString label_;
  QRectF labelRect_;
  QRectF bounds_;
};

}  // namespace kiln::views
