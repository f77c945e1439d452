// How numbers read in the panels: tolerances as typed ("0.001", "1e-5"), errors in scientific
// notation with short exponents, cosine to 6 decimals, SNR to 0.1 dB; and the tolerance field that
// shows, accepts and steps through them; input shape lists as shapes.
#include <accuracy/tolerance_spin_box.h>
#include <common/value_format.h>

#include <QLineEdit>
#include <QLocale>
#include <QRandomGenerator>
#include <QtTest>

#include <cmath>
#include <limits>

using namespace kiln::views;

class ValueFormatTest : public QObject {
  Q_OBJECT
 private slots:
  void compactNumbersAreShortAndExact() {
    QCOMPARE(formatCompactNumber(1e-3), QStringLiteral("0.001"));
    QCOMPARE(formatCompactNumber(1e-5), QStringLiteral("1e-5"));
    QCOMPARE(formatCompactNumber(2.5e6), QStringLiteral("2.5e+6"));
    QCOMPARE(formatCompactNumber(0.1 + 0.2), QStringLiteral("0.3"));
    QCOMPARE(formatCompactNumber(0), QStringLiteral("0"));
    QCOMPARE(formatCompactNumber(12), QStringLiteral("12"));
    // Any value reads back to within the 6 digits shown, and never with padded exponents.
    QRandomGenerator random(17);
    for (int i = 0; i < 1000; ++i) {
      const double value = random.generateDouble() * std::pow(10.0, random.bounded(-12, 12));
      const QString text = formatCompactNumber(value);
      bool ok = false;
      const double back = QLocale::c().toDouble(text, &ok);
      QVERIFY2(ok, qPrintable(text));
      QVERIFY2(std::abs(back - value) <= 6e-6 * value, qPrintable(text));
      QVERIFY2(!text.contains("e-0") && !text.contains("e+0"), qPrintable(text));
      QVERIFY2(text.size() <= 12, qPrintable(text));
    }
  }

  void metricsHaveTheirOwnFormats() {
    QCOMPARE(formatError(2.6789e-5), QStringLiteral("2.68e-5"));
    QCOMPARE(formatError(3.2e-4, 0), QStringLiteral("3e-4"));
    QCOMPARE(formatError(1.5e12), QStringLiteral("1.50e+12"));
    QCOMPARE(formatError(0), QStringLiteral("0"));
    QCOMPARE(formatError(std::numeric_limits<double>::infinity()), QStringLiteral("∞"));
    QCOMPARE(formatError(std::numeric_limits<double>::quiet_NaN()), QStringLiteral("NaN"));
    QCOMPARE(formatCosine(0.99999), QStringLiteral("0.999990"));
    QCOMPARE(formatCosine(-1), QStringLiteral("-1.000000"));
    QCOMPARE(formatDecibels(77.04), QStringLiteral("77.0"));
    QCOMPARE(formatDecibels(999), QStringLiteral("∞"));  // the comparator's "identical"
    QCOMPARE(formatDecibels(-3.25), QStringLiteral("-3.3"));
  }

  void shapeListsReadLikeShapes() {
    QCOMPARE(formatShapeList("x:1x3x224x224,mask:1x128"), QStringLiteral("x 1×3×224×224, mask 1×128"));
    QCOMPARE(formatShapeList("input:0:8x16"), QStringLiteral("input:0 8×16"));
    QCOMPARE(formatShapeList(""), QString());
  }

  void toleranceFieldShowsAcceptsAndStepsByDecades() {
    ToleranceSpinBox box;
    QLineEdit* edit = box.findChild<QLineEdit*>();
    QVERIFY(edit);
    box.setValue(1e-3);
    QCOMPARE(edit->text(), QStringLiteral("0.001"));
    box.stepBy(1);
    QCOMPARE(box.value(), 1e-2);
    box.stepBy(-3);
    QCOMPARE(box.value(), 1e-5);
    QCOMPARE(edit->text(), QStringLiteral("1e-5"));
    box.setValue(0.0015);
    box.stepBy(1);
    QCOMPARE(box.value(), 0.015);
    box.setValue(0);
    box.stepBy(1);
    QVERIFY(box.value() > 0);

    // What a person types, scientific notation included.
    edit->setText(QStringLiteral("2.5e-4"));
    box.interpretText();
    QCOMPARE(box.value(), 2.5e-4);
    QString text = QStringLiteral("1e-");
    int position = text.size();
    QCOMPARE(box.validate(text, position), QValidator::Intermediate);  // on the way to 1e-5
    text = QStringLiteral("abc");
    QCOMPARE(box.validate(text, position), QValidator::Invalid);
    text = QStringLiteral("5000");
    QCOMPARE(box.validate(text, position), QValidator::Intermediate);  // above the range
  }
};

QTEST_MAIN(ValueFormatTest)
#include "value_format_test.moc"
