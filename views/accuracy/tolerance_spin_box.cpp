#include "accuracy/tolerance_spin_box.h"

#include "common/value_format.h"

#include <QLocale>
#include <QRegularExpression>

#include <cmath>

namespace kiln::views {
namespace {

constexpr double kSmallestStep = 1e-9;  // stepping up from 0 starts here
constexpr int kStoredDecimals = 12;      // what the value keeps; the text shows only what matters

bool parse(const QString& text, double* value) {
  bool ok = false;
  *value = QLocale::c().toDouble(text.trimmed(), &ok);
  return ok && std::isfinite(*value);
}

}  // namespace

ToleranceSpinBox::ToleranceSpinBox(QWidget* parent) : QDoubleSpinBox(parent) {
  setDecimals(kStoredDecimals);
  setRange(0, 1000);
  setKeyboardTracking(false);  // "1e-" is on the way to "1e-5": re-measure once the text is done
}

QString ToleranceSpinBox::textFromValue(double value) const { return formatCompactNumber(value); }

double ToleranceSpinBox::valueFromText(const QString& text) const {
  double value = 0;
  return parse(text, &value) ? value : this->value();
}

QValidator::State ToleranceSpinBox::validate(QString& text, int&) const {
  double value = 0;
  if (parse(text, &value)) return value >= minimum() && value <= maximum() ? QValidator::Acceptable : QValidator::Intermediate;
  // Digits, one point, an exponent: anything that can still become a number.
  static const QRegularExpression partial(QStringLiteral("^\\s*[0-9]*\\.?[0-9]*([eE][-+]?[0-9]*)?\\s*$"));
  return partial.match(text).hasMatch() ? QValidator::Intermediate : QValidator::Invalid;
}

void ToleranceSpinBox::stepBy(int steps) {
  const double current = value();
  if (current <= 0) {
    if (steps > 0) setValue(kSmallestStep * std::pow(10.0, steps - 1));
    return;
  }
  // Rounded to the digits shown, so 0.0015 steps to 0.015 and not to 0.015000000000000001.
  setValue(QLocale::c().toDouble(formatCompactNumber(current * std::pow(10.0, steps))));
}

// Wide enough for "0.0001" or "2.5e-7" and the arrows, whatever the range's end values print as.
QSize ToleranceSpinBox::sizeHint() const {
  QSize size = QDoubleSpinBox::sizeHint();
  const int text = fontMetrics().horizontalAdvance(QStringLiteral("0.00001 "));
  size.setWidth(std::max(size.width(), text + 2 * fontMetrics().height()));
  return size;
}

QSize ToleranceSpinBox::minimumSizeHint() const { return sizeHint(); }

}  // namespace kiln::views
