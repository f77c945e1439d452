#include "graph/node_item.h"

#include "common/heat_scale.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <QStyleOptionGraphicsItem>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::views {

namespace graph_style {
QFont titleFont() {
  QFont font;
  font.setPixelSize(12);
  font.setBold(true);
  return font;
}
QFont textFont() {
  QFont font;
  font.setPixelSize(11);
  return font;
}
QFont labelFont() {
  QFont font;
  font.setPixelSize(10);
  return font;
}
QColor background() { return QColor(0xF6, 0xF7, 0xF9); }
QColor edgeColor() { return QColor(0x8A, 0x93, 0xA0); }
QColor selectionColor() { return QColor(0xF2, 0x9D, 0x1E); }
QColor highlightColor() { return QColor(0x0E, 0x9F, 0xD8); }
}  // namespace graph_style

namespace {

constexpr double kHeaderHeight = 22;
constexpr double kRowHeight = 16;
constexpr double kPadding = 8;
constexpr double kMinWidth = 96;
constexpr double kMaxWidth = 280;
constexpr double kRadius = 5;
constexpr double kMinValueWidth = 24;
constexpr double kStackOffset = 4;  // how far the cards behind a collapsed group peek out
// Below this zoom a node is drawn as a plain coloured box: text would be unreadable and slow.
constexpr double kDetailZoom = 0.35;

const QColor kBorder(0xC5, 0xCB, 0xD3);
const QColor kBody(0xFF, 0xFF, 0xFF);
const QColor kMutedText(0x6B, 0x72, 0x80);
const QColor kText(0x1F, 0x29, 0x37);
const QColor kTerminalFill(0x37, 0x41, 0x51);

QFont keyFont() {
  QFont font = graph_style::textFont();
  font.setBold(true);
  return font;
}

// Row keys form a column; values start after the widest key.
double keyColumnWidth(const NodeContent& content) {
  const QFontMetricsF metrics(keyFont());
  double width = 0;
  for (const auto& row : content.rows) width = std::max(width, metrics.horizontalAdvance(row.key));
  return width + 8;
}

double rowsHeight(const NodeContent& content) {
  return content.rows.empty() ? 0 : double(content.rows.size()) * kRowHeight + 4;
}

QSizeF measure(const NodeContent& content) {
  const QFontMetricsF title(graph_style::titleFont()), text(graph_style::textFont());
  double width = title.horizontalAdvance(content.title);
  if (content.style == NodeContent::Style::kTerminal) {
    width = std::max(width, text.horizontalAdvance(content.subtitle));
    return {std::clamp(width + 2 * kPadding + 8, kMinWidth, kMaxWidth), 38};
  }
  if (content.style == NodeContent::Style::kGroup) width += 22;  // room for the expand badge
  width = std::max(width, text.horizontalAdvance(content.subtitle));
  const double keyColumn = keyColumnWidth(content);
  // Keys are never elided: paintRows keeps kMinValueWidth for the value beside the key column.
  for (const auto& row : content.rows)
    width = std::max(width, keyColumn + std::max(kMinValueWidth, text.horizontalAdvance(row.value)));
  double height = kHeaderHeight + kRowHeight + 4 + rowsHeight(content);
  if (content.style == NodeContent::Style::kGroup) height += kStackOffset * 2;
  return {std::clamp(width + 2 * kPadding, kMinWidth, kMaxWidth), height};
}

QPainterPath roundedTop(const QRectF& rect, double radius) {
  QPainterPath path;
  path.moveTo(rect.bottomLeft());
  path.lineTo(rect.left(), rect.top() + radius);
  path.quadTo(rect.topLeft(), QPointF(rect.left() + radius, rect.top()));
  path.lineTo(rect.right() - radius, rect.top());
  path.quadTo(rect.topRight(), QPointF(rect.right(), rect.top() + radius));
  path.lineTo(rect.bottomRight());
  path.closeSubpath();
  return path;
}

void drawElided(QPainter* painter, const QRectF& rect, const QString& text, Qt::Alignment align) {
  const QFontMetricsF metrics(painter->font());
  painter->drawText(rect, int(align | Qt::AlignVCenter), metrics.elidedText(text, Qt::ElideMiddle, rect.width()));
}

}  // namespace

NodeItem::NodeItem(NodeContent content, int index, bool isGroup)
    : content_(std::move(content)),
      index_(index),
      isGroup_(isGroup),
      size_(measure(content_)),
      heat_(std::numeric_limits<double>::quiet_NaN()) {
  setFlag(ItemIsSelectable);
  setZValue(2);
  setToolTip(content_.subtitle.isEmpty() ? content_.title : content_.title + QChar('\n') + content_.subtitle);
}

void NodeItem::setHeat(double fraction, const QString& label) {
  heat_ = fraction;
  heatLabel_ = label;
  update();
}

void NodeItem::setDimmed(bool dimmed) { setOpacity(dimmed ? 0.4 : 1.0); }

void NodeItem::setHighlighted(bool highlighted) {
  if (highlighted_ == highlighted) return;
  highlighted_ = highlighted;
  update();
}

QRectF NodeItem::boundingRect() const {
  // Pad for the selection and highlight outlines and the heat badge, which sits on the top edge.
  return QRectF(-size_.width() / 2 - 4, -size_.height() / 2 - 10, size_.width() + 8, size_.height() + 14);
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const QRectF box(-size_.width() / 2, -size_.height() / 2, size_.width(), size_.height());
  const double zoom = option->levelOfDetailFromTransform(painter->worldTransform());
  if (zoom < kDetailZoom) {
    const QColor fill = !std::isnan(heat_) ? heatColor(heat_) : content_.accent;
    painter->fillRect(box, content_.style == NodeContent::Style::kTerminal ? kTerminalFill : fill);
  } else {
    painter->setRenderHint(QPainter::Antialiasing);
    switch (content_.style) {
      case NodeContent::Style::kLayer: paintLayer(painter, box); break;
      case NodeContent::Style::kTerminal: paintTerminal(painter, box); break;
      case NodeContent::Style::kGroup: paintGroup(painter, box); break;
    }
  }
  if (highlighted_) {
    painter->setBrush(Qt::NoBrush);
    painter->setPen(QPen(graph_style::highlightColor(), 3));
    painter->drawRoundedRect(box.adjusted(-2.5, -2.5, 2.5, 2.5), kRadius + 2, kRadius + 2);
  }
  if (isSelected()) {
    painter->setBrush(Qt::NoBrush);
    painter->setPen(QPen(graph_style::selectionColor(), 2.5));
    painter->drawRoundedRect(box.adjusted(-1, -1, 1, 1), kRadius + 1, kRadius + 1);
  }
  if (!std::isnan(heat_) && zoom >= kDetailZoom) paintHeatBadge(painter, box);
}

void NodeItem::paintHeatBadge(QPainter* painter, const QRectF& box) const {
  if (heatLabel_.isEmpty()) return;
  QFont font = graph_style::labelFont();
  font.setBold(true);
  painter->setFont(font);
  const QFontMetricsF metrics(font);
  const double width = metrics.horizontalAdvance(heatLabel_) + 10;
  const QRectF badge(box.right() - width - 4, box.top() - 8, width, 15);
  painter->setPen(QPen(QColor(0x7F, 0x1D, 0x1D, 90), 1));
  painter->setBrush(heatColor(heat_));
  painter->drawRoundedRect(badge, 7, 7);
  painter->setPen(heat_ > 0.6 ? Qt::white : kText);
  painter->drawText(badge, Qt::AlignCenter, heatLabel_);
}

QColor NodeItem::bodyColor() const {
  if (std::isnan(heat_)) return kBody;
  const QColor heat = heatColor(heat_);
  // Light enough that the rows stay readable, strong enough to read as a heatmap from afar.
  return QColor::fromRgbF(float(0.35 + 0.65 * heat.redF()), float(0.35 + 0.65 * heat.greenF()),
                          float(0.35 + 0.65 * heat.blueF()));
}

void NodeItem::paintLayer(QPainter* painter, const QRectF& box) const {
  painter->setPen(QPen(kBorder, 1));
  painter->setBrush(bodyColor());
  painter->drawRoundedRect(box, kRadius, kRadius);
  const QRectF header(box.left(), box.top(), box.width(), kHeaderHeight);
  painter->setPen(Qt::NoPen);
  painter->setBrush(content_.accent);
  painter->drawPath(roundedTop(header, kRadius));
  painter->setPen(Qt::white);
  painter->setFont(graph_style::titleFont());
  drawElided(painter, header.adjusted(kPadding, 0, -kPadding, 0), content_.title, Qt::AlignLeft);
  painter->setPen(kMutedText);
  painter->setFont(graph_style::textFont());
  const QRectF nameRow(box.left() + kPadding, header.bottom() + 2, box.width() - 2 * kPadding, kRowHeight);
  drawElided(painter, nameRow, content_.subtitle, Qt::AlignLeft);
  paintRows(painter, box, nameRow.bottom() + 2);
}

void NodeItem::paintRows(QPainter* painter, const QRectF& box, double top) const {
  if (content_.rows.empty()) return;
  painter->setPen(QPen(QColor(0xE5, 0xE7, 0xEB), 1));
  painter->drawLine(QPointF(box.left() + 1, top), QPointF(box.right() - 1, top));
  const double keyWidth = std::min(keyColumnWidth(content_), box.width() - 2 * kPadding - kMinValueWidth);
  double y = top + 2;
  for (const auto& row : content_.rows) {
    const QRectF rowRect(box.left() + kPadding, y, box.width() - 2 * kPadding, kRowHeight);
    painter->setFont(keyFont());
    painter->setPen(row.isWeight ? kText : kMutedText);
    drawElided(painter, QRectF(rowRect.left(), y, keyWidth, kRowHeight), row.key, Qt::AlignLeft);
    painter->setFont(graph_style::textFont());
    painter->setPen(kText);
    drawElided(painter, rowRect.adjusted(keyWidth, 0, 0, 0), row.value, Qt::AlignLeft);
    y += kRowHeight;
  }
}

void NodeItem::paintTerminal(QPainter* painter, const QRectF& box) const {
  painter->setPen(Qt::NoPen);
  painter->setBrush(kTerminalFill);
  painter->drawRoundedRect(box, box.height() / 2, box.height() / 2);
  painter->setPen(Qt::white);
  painter->setFont(graph_style::titleFont());
  const QRectF inner = box.adjusted(kPadding + 4, 3, -kPadding - 4, -3);
  drawElided(painter, QRectF(inner.left(), inner.top(), inner.width(), inner.height() / 2 + 1), content_.title,
             Qt::AlignHCenter);
  painter->setPen(QColor(0xD1, 0xD5, 0xDB));
  painter->setFont(graph_style::textFont());
  drawElided(painter, QRectF(inner.left(), inner.center().y(), inner.width(), inner.height() / 2), content_.subtitle,
             Qt::AlignHCenter);
}

void NodeItem::paintGroup(QPainter* painter, const QRectF& box) const {
  // Two cards peek out behind the front one: the group holds many layers.
  const QRectF front = box.adjusted(0, 0, -2 * kStackOffset, -2 * kStackOffset);
  painter->setPen(QPen(kBorder, 1));
  for (int card = 2; card >= 1; --card) {
    painter->setBrush(card == 2 ? QColor(0xE5, 0xE7, 0xEB) : QColor(0xF3, 0xF4, 0xF6));
    painter->drawRoundedRect(front.translated(card * kStackOffset, card * kStackOffset), kRadius, kRadius);
  }
  painter->setBrush(bodyColor());
  painter->drawRoundedRect(front, kRadius, kRadius);
  const QRectF header(front.left(), front.top(), front.width(), kHeaderHeight);
  painter->setPen(Qt::NoPen);
  painter->setBrush(content_.accent);
  painter->drawPath(roundedTop(header, kRadius));
  // The "+" badge says the group expands (double-click).
  const QRectF badge(header.right() - 19, header.top() + 4, 14, 14);
  painter->setBrush(QColor(255, 255, 255, 60));
  painter->drawRoundedRect(badge, 3, 3);
  painter->setPen(QPen(Qt::white, 1.6));
  painter->drawLine(QPointF(badge.center().x(), badge.top() + 3), QPointF(badge.center().x(), badge.bottom() - 3));
  painter->drawLine(QPointF(badge.left() + 3, badge.center().y()), QPointF(badge.right() - 3, badge.center().y()));
  painter->setFont(graph_style::titleFont());
  drawElided(painter, header.adjusted(kPadding, 0, -24, 0), content_.title, Qt::AlignLeft);
  painter->setPen(kMutedText);
  painter->setFont(graph_style::textFont());
  const QRectF countRow(front.left() + kPadding, header.bottom() + 2, front.width() - 2 * kPadding, kRowHeight);
  drawElided(painter, countRow, content_.subtitle, Qt::AlignLeft);
  paintRows(painter, front, countRow.bottom() + 2);
}

ClusterItem::ClusterItem(int group, QString title, QRectF rect, int depth)
    : group_(group), title_(std::move(title)), rect_(rect), depth_(depth) {
  setZValue(0);
  setToolTip(QObject::tr("%1 — double-click the title to collapse").arg(title_));
}

double ClusterItem::titleHeight() { return 20; }

QRectF ClusterItem::titleRect() const { return QRectF(rect_.left(), rect_.top(), rect_.width(), titleHeight()); }

void ClusterItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing);
  // Nested frames get slightly darker so the nesting reads at a glance.
  const int shade = std::max(0, 0xEE - 8 * depth_);
  painter->setPen(QPen(QColor(0xC9, 0xCF, 0xD8), 1, Qt::DashLine));
  painter->setBrush(QColor(shade, shade + 1, std::min(255, shade + 4), 150));
  painter->drawRoundedRect(rect_, 8, 8);
  painter->setPen(QColor(0x4B, 0x55, 0x63));
  QFont font = graph_style::textFont();
  font.setBold(true);
  painter->setFont(font);
  drawElided(painter, titleRect().adjusted(10, 2, -10, 0), QStringLiteral("▾ ") + title_, Qt::AlignLeft);
}

}  // namespace kiln::views
