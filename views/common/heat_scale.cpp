#include "common/heat_scale.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace kiln::views {
namespace {

constexpr std::array<QRgb, 5> kStops = {0xFFF7BC, 0xFEC44F, 0xFB8C2C, 0xE0412A, 0x991B1B};

QColor mix(QColor a, QColor b, double t) {
  return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t), float(a.greenF() + (b.greenF() - a.greenF()) * t),
                          float(a.blueF() + (b.blueF() - a.blueF()) * t));
}

}  // namespace

QColor heatColor(double fraction) {
  const double scaled = std::clamp(std::isfinite(fraction) ? fraction : 0.0, 0.0, 1.0) * double(kStops.size() - 1);
  const size_t low = std::min(size_t(scaled), kStops.size() - 2);
  return mix(QColor(kStops[low]), QColor(kStops[low + 1]), scaled - double(low));
}

QLinearGradient heatGradient(QPointF start, QPointF end) {
  QLinearGradient gradient(start, end);
  for (size_t i = 0; i < kStops.size(); ++i) gradient.setColorAt(double(i) / double(kStops.size() - 1), QColor(kStops[i]));
  return gradient;
}

}  // namespace kiln::views
