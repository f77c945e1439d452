// The quantization advice's Pareto plot as plain SVG: each candidate layer at (time it saves, error
// when only it is reduced), error on a log scale, the Pareto front joined, the suggested layers in
// red, the criterion's limit as a dashed line. Hovering a point shows its numbers (<title>).
#include <kiln/quantization_advisor.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace kiln {
namespace {

constexpr double kWidth = 760, kHeight = 500, kLeft = 80, kRight = 30, kTop = 50, kBottom = 70;

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

std::string general(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

// Axes: saved milliseconds (linear) and log10 of the error; infinite errors sit on the top edge.
struct Axes {
  double x0 = 0, x1 = 1, y0 = -6, y1 = 0;
  double x(double ms) const { return kLeft + (ms - x0) / (x1 - x0) * (kWidth - kLeft - kRight); }
  double y(double error) const {
    const double e = std::isfinite(error) ? std::log10(std::max(error, std::pow(10.0, y0))) : y1;
    return kHeight - kBottom - (std::min(e, y1) - y0) / (y1 - y0) * (kHeight - kTop - kBottom);
  }
};

Axes axesFor(const QuantizationAdvice& advice) {
  Axes a;
  double lo = 0, hi = 0, smallest = advice.criterion.limit(), largest = advice.criterion.limit();
  for (const auto& l : advice.layers) {
    lo = std::min(lo, l.savedMs());
    hi = std::max(hi, l.savedMs());
    if (l.alone.error > 0 && std::isfinite(l.alone.error)) {
      smallest = std::min(smallest, l.alone.error);
      largest = std::max(largest, l.alone.error);
    }
  }
  const double pad = std::max((hi - lo) * 0.08, 1e-3);
  a.x0 = lo - pad;
  a.x1 = hi + pad;
  a.y0 = std::floor(std::log10(smallest > 0 ? smallest : 1e-6)) - 1;
  a.y1 = std::ceil(std::log10(largest > 0 ? largest : 1)) + 1;
  return a;
}

void drawAxes(std::ostringstream& svg, const Axes& a) {
  const double bottom = kHeight - kBottom, right = kWidth - kRight;
  svg << "<rect x='" << kLeft << "' y='" << kTop << "' width='" << right - kLeft << "' height='" << bottom - kTop
      << "' fill='none' stroke='#444'/>\n";
  for (int d = int(a.y0); d <= int(a.y1); ++d) {
    const double y = a.y(std::pow(10.0, d));
    svg << "<line x1='" << kLeft << "' y1='" << fixed(y, 1) << "' x2='" << right << "' y2='" << fixed(y, 1)
        << "' stroke='#ddd'/>\n<text x='" << kLeft - 6 << "' y='" << fixed(y + 4, 1)
        << "' text-anchor='end' font-size='11'>1e" << d << "</text>\n";
  }
  // Ticks at a round step: 1, 2 or 5 times a power of ten, about five of them.
  const double rough = (a.x1 - a.x0) / 5, decade = std::pow(10.0, std::floor(std::log10(rough)));
  const double step = decade * (rough / decade >= 5 ? 5 : rough / decade >= 2 ? 2 : 1);
  for (double ms = std::ceil(a.x0 / step) * step; ms <= a.x1; ms += step) {
    const double x = a.x(std::abs(ms) < step / 2 ? 0.0 : ms);
    svg << "<line x1='" << fixed(x, 1) << "' y1='" << bottom << "' x2='" << fixed(x, 1) << "' y2='" << bottom + 5
        << "' stroke='#444'/>\n<text x='" << fixed(x, 1) << "' y='" << bottom + 18
        << "' text-anchor='middle' font-size='11'>" << general(std::abs(ms) < step / 2 ? 0.0 : ms) << "</text>\n";
  }
  if (a.x0 < 0 && a.x1 > 0)
    svg << "<line x1='" << fixed(a.x(0), 1) << "' y1='" << kTop << "' x2='" << fixed(a.x(0), 1) << "' y2='" << bottom
        << "' stroke='#999'/>\n";
}

// Point labels that keep off each other and the plot's edges: to the right of the point, else to
// its left, else none (the point's tooltip still names it).
struct Labels {
  struct Box {
    double x0, y0, x1, y1;
  };
  std::vector<Box> taken;

  void place(std::ostringstream& svg, double x, double y, const std::string& text) {
    const double width = 6.0 * double(text.size()), top = y - 16, bottom = y - 4;
    for (const bool right : {true, false}) {
      const Box box = right ? Box{x + 7, top, x + 7 + width, bottom} : Box{x - 7 - width, top, x - 7, bottom};
      if (box.x0 < kLeft || box.x1 > kWidth - kRight || box.y0 < kTop) continue;
      bool overlaps = false;
      for (const Box& b : taken) overlaps = overlaps || (box.x0 < b.x1 && b.x0 < box.x1 && box.y0 < b.y1 && b.y0 < box.y1);
      if (overlaps) continue;
      taken.push_back(box);
      svg << "<text x='" << fixed(right ? box.x0 : box.x1, 1) << "' y='" << fixed(y - 6, 1) << "' font-size='10'"
          << (right ? "" : " text-anchor='end'") << ">" << escaped(text) << "</text>\n";
      return;
    }
  }
};

}  // namespace

std::string QuantizationAdvice::toSvg() const {
  const Axes a = axesFor(*this);
  std::ostringstream svg;
  svg << "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='" << kWidth
      << "' height='" << kHeight << "' viewBox='0 0 " << kWidth << " " << kHeight
      << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << kWidth / 2 << "' y='22' text-anchor='middle' font-size='15'>Quantization advice: "
      << layers.size() << " layers, each alone in " << escaped(layers.empty() ? "" : layers.front().precision)
      << " (others " << toString(keepPrecision) << ")</text>\n";
  drawAxes(svg, a);
  svg << "<text x='" << (kLeft + kWidth - kRight) / 2 << "' y='" << kHeight - 30
      << "' text-anchor='middle' font-size='12'>time saved by reducing the layer (ms, per-layer profile)</text>\n"
      << "<text transform='translate(18," << (kTop + kHeight - kBottom) / 2
      << ") rotate(-90)' text-anchor='middle' font-size='12'>error with only the layer reduced ("
      << (criterion.metric == AccuracyCriterion::Metric::kCosine ? "1 - cosine" : "tolerance ratio") << ")</text>\n";

  const double limitY = a.y(criterion.limit());
  svg << "<line x1='" << kLeft << "' y1='" << fixed(limitY, 1) << "' x2='" << kWidth - kRight << "' y2='"
      << fixed(limitY, 1) << "' stroke='#d62728' stroke-dasharray='6 4'/>\n<text x='" << kLeft + 4
      << "' y='" << fixed(limitY - 5, 1) << "' font-size='11' fill='#d62728'>limit: "
      << escaped(criterion.describe()) << "</text>\n";

  std::vector<const LayerAdvice*> front;
  for (const auto& l : layers)
    if (l.pareto) front.push_back(&l);
  std::sort(front.begin(), front.end(), [](auto* p, auto* q) { return p->savedMs() < q->savedMs(); });
  if (front.size() > 1) {
    svg << "<polyline fill='none' stroke='#2ca02c' stroke-width='1.5' points='";
    for (const auto* l : front) svg << fixed(a.x(l->savedMs()), 1) << "," << fixed(a.y(l->alone.error), 1) << " ";
    svg << "'/>\n";
  }
  Labels labels;
  labels.taken.push_back({kLeft, limitY - 16, kLeft + 200, limitY});  // the limit's own label
  for (const auto& l : layers) {
    const double x = a.x(l.savedMs()), y = a.y(l.alone.error);
    svg << "<circle cx='" << fixed(x, 1) << "' cy='" << fixed(y, 1) << "' r='4.5' fill='"
        << (l.keep ? "#d62728" : "#1f77b4") << "' stroke='" << (l.pareto ? "#2ca02c" : "white")
        << "' stroke-width='1.5'><title>" << escaped(l.name) << " (" << escaped(l.type) << "): error "
        << general(l.alone.error) << ", worst cosine " << fixed(l.alone.worstCosine, 5) << ", saves "
        << general(l.savedMs()) << " ms" << (l.keep ? ", suggested to keep" : "") << "</title></circle>\n";
    if (l.keep || l.pareto) labels.place(svg, x, y, l.name);
  }
  const double legendY = kHeight - 12;
  svg << "<circle cx='" << kLeft << "' cy='" << legendY - 4 << "' r='4.5' fill='#d62728'/><text x='" << kLeft + 9
      << "' y='" << legendY << "' font-size='11'>keep in " << toString(keepPrecision)
      << " (suggested)</text>\n<circle cx='" << kLeft + 190 << "' cy='" << legendY - 4
      << "' r='4.5' fill='#1f77b4'/><text x='" << kLeft + 199 << "' y='" << legendY
      << "' font-size='11'>reduce</text>\n<line x1='" << kLeft + 270 << "' y1='" << legendY - 4 << "' x2='"
      << kLeft + 290 << "' y2='" << legendY - 4 << "' stroke='#2ca02c' stroke-width='1.5'/><text x='" << kLeft + 295
      << "' y='" << legendY << "' font-size='11'>Pareto front (least error for the time saved)</text>\n</svg>\n";
  return svg.str();
}

}  // namespace kiln
