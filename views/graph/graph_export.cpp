#include "graph/graph_export.h"

#include <kiln/error.h>

#include <QFileInfo>
#include <QGraphicsScene>
#include <QImage>
#include <QImageWriter>
#include <QPainter>
#include <QSvgGenerator>

#include <algorithm>

namespace kiln::views {
namespace {

// Twice the scene's resolution reads well when zoomed; the cap keeps huge graphs under ~1 GiB.
constexpr double kPngScale = 2.0;
constexpr double kMaxPngSide = 16000;

std::string text(const QString& s) { return s.toStdString(); }

void exportPng(QGraphicsScene& scene, const QString& path) {
  const QRectF source = scene.sceneRect();
  const double scale = std::min(kPngScale, kMaxPngSide / std::max(source.width(), source.height()));
  QImage image(QSize(int(source.width() * scale), int(source.height() * scale)), QImage::Format_ARGB32_Premultiplied);
  if (image.isNull())
    throw Error(ErrorCode::kIoError, "the graph is too large for a PNG image; export it as SVG instead");
  image.fill(scene.backgroundBrush().color());
  {
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    scene.render(&painter, QRectF(image.rect()), source);
  }
  QImageWriter writer(path, "png");
  if (!writer.write(image))
    throw Error(ErrorCode::kIoError, "could not write '" + text(path) + "': " + text(writer.errorString()) +
                                         "; choose a folder you can write to");
}

void exportSvg(QGraphicsScene& scene, const QString& path) {
  const QRectF source = scene.sceneRect();
  QSvgGenerator generator;
  generator.setFileName(path);
  generator.setSize(source.size().toSize());
  generator.setViewBox(QRectF(QPointF(0, 0), source.size()));
  generator.setTitle(QFileInfo(path).completeBaseName());
  generator.setDescription(QStringLiteral("Graph exported by Kiln Studio"));
  QPainter painter;
  if (!painter.begin(&generator))
    throw Error(ErrorCode::kIoError, "could not write '" + text(path) + "'; choose a folder you can write to");
  painter.fillRect(QRectF(QPointF(0, 0), source.size()), scene.backgroundBrush());
  scene.render(&painter, QRectF(QPointF(0, 0), source.size()), source);
  painter.end();
  if (!QFileInfo(path).exists() || QFileInfo(path).size() == 0)
    throw Error(ErrorCode::kIoError, "could not write '" + text(path) + "'; choose a folder you can write to");
}

}  // namespace

void exportGraph(QGraphicsScene& scene, const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("png")) return exportPng(scene, path);
  if (suffix == QLatin1String("svg")) return exportSvg(scene, path);
  throw Error(ErrorCode::kInvalidArgument,
              "cannot export to '" + text(path) + "': the file name must end in .png or .svg");
}

}  // namespace kiln::views
