#pragma once
// The colour ramp for heatmaps on the graph (layer time, layer error): pale yellow for the
// smallest values through orange to deep red for the largest.
#include <QColor>
#include <QLinearGradient>

namespace kiln::views {

// `fraction` in [0, 1] (clamped).
QColor heatColor(double fraction);
// The same ramp as a gradient from `start` (0) to `end` (1), for legends and bar charts.
QLinearGradient heatGradient(QPointF start, QPointF end);

}  // namespace kiln::views
