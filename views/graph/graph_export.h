#pragma once
// Saves the whole graph as an image: PNG (raster, scaled to stay under a size limit) or SVG
// (vector, through QSvgGenerator).
#include <QString>

class QGraphicsScene;

namespace kiln::views {

// The format follows the file's suffix (.png or .svg). Throws kiln::Error (kIoError with the path
// and the reason, kInvalidArgument for other suffixes).
void exportGraph(QGraphicsScene& scene, const QString& path);

}  // namespace kiln::views
