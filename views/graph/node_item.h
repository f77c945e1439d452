#pragma once
// The boxes of the graph: layers (coloured header with the op type, then name, weights and key
// attributes), graph inputs and outputs (dark pills), collapsed groups (stacked cards), and the
// frames drawn around expanded groups.
#include <QColor>
#include <QFont>
#include <QGraphicsItem>
#include <QString>

#include <vector>

namespace kiln::views {

struct NodeContent {
  enum class Style { kLayer, kTerminal, kGroup };
  struct Row {
    QString key;
    QString value;
    bool isWeight = false;
  };
  Style style = Style::kLayer;
  QColor accent;
  QString title;     // op type, tensor name or group title
  QString subtitle;  // layer name, tensor shape or "12 layers"
  std::vector<Row> rows;
};

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  // `index` is the structure's node index, or its group index when `isGroup`.
  NodeItem(NodeContent content, int index, bool isGroup);

  int type() const override { return Type; }
  int index() const { return index_; }
  bool isGroup() const { return isGroup_; }
  const NodeContent& content() const { return content_; }
  QSizeF size() const { return size_; }

  // Heatmap colouring (layer time, layer error): `fraction` in [0, 1] tints the body, `label` shows
  // in a badge; NaN clears. Nodes without heat are dimmed while a heatmap is shown.
  void setHeat(double fraction, const QString& label);
  void setDimmed(bool dimmed);
  // Outlined as part of the engine layer selected in the fusion view.
  void setHighlighted(bool highlighted);
  bool isHighlighted() const { return highlighted_; }

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  void paintHeatBadge(QPainter* painter, const QRectF& box) const;
  QColor bodyColor() const;
  void paintLayer(QPainter* painter, const QRectF& box) const;
  void paintTerminal(QPainter* painter, const QRectF& box) const;
  void paintGroup(QPainter* painter, const QRectF& box) const;
  void paintRows(QPainter* painter, const QRectF& box, double top) const;

  NodeContent content_;
  int index_ = 0;
  bool isGroup_ = false;
  QSizeF size_;
  double heat_;
  QString heatLabel_;
  bool highlighted_ = false;
};

// The frame around an expanded group; its title bar collapses the group when double-clicked.
class ClusterItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  ClusterItem(int group, QString title, QRectF rect, int depth);
  int type() const override { return Type; }
  int group() const { return group_; }
  QRectF titleRect() const;
  QRectF boundingRect() const override { return rect_; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  static double titleHeight();

 private:
  int group_;
  QString title_;
  QRectF rect_;
  int depth_;
};

// Fonts and colours shared by the graph's items.
namespace graph_style {
QFont titleFont();
QFont textFont();
QFont labelFont();
QColor background();
QColor edgeColor();
QColor selectionColor();
QColor highlightColor();
}  // namespace graph_style

}  // namespace kiln::views
