#pragma once
// A tolerance field: shows "0.001" or "1e-5" instead of a fixed count of decimals, accepts what it
// shows (scientific notation included), and the arrows step by decades (1e-3 → 1e-2), which is how
// tolerances are tuned.
#include <QDoubleSpinBox>

namespace kiln::views {

class ToleranceSpinBox : public QDoubleSpinBox {
 public:
  explicit ToleranceSpinBox(QWidget* parent = nullptr);

  QString textFromValue(double value) const override;
  double valueFromText(const QString& text) const override;
  QValidator::State validate(QString& text, int& position) const override;
  void stepBy(int steps) override;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;
};

}  // namespace kiln::views
