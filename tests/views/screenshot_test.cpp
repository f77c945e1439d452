// Runs `kiln-studio --screenshot FILE MODEL` on a model with many op types and checks the picture is
// a real rendering: many distinct colours, plenty of non-background pixels. The PNG stays in the
// build folder (studio_screenshot.png) for people to look at.
#include "sample_networks.h"

#include <QFile>
#include <QImage>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

namespace {

// Starts kiln-studio offscreen with `arguments`, with a private settings folder under `configRoot`
// (the tests must not read or change the user's window state) when one is given.
void startStudio(QProcess& studio, const QStringList& arguments, const QString& configRoot = {}) {
  QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
  environment.insert("QT_QPA_PLATFORM", "offscreen");
  if (!configRoot.isEmpty()) environment.insert("XDG_CONFIG_HOME", configRoot);
  studio.setProcessEnvironment(environment);
  studio.start(KILN_STUDIO_EXECUTABLE, arguments);
}

}  // namespace

class ScreenshotTest : public QObject {
  Q_OBJECT
 private slots:
  void screenshotShowsTheGraph() {
    QTemporaryDir dir;
    const QString model = dir.filePath("sample.onnx");
    {
      QFile file(model);
      QVERIFY(file.open(QIODevice::WriteOnly));
      const std::string bytes = kiln::test::sampleNetworkOnnx({.stages = 3, .blocksPerStage = 2});
      file.write(bytes.data(), qint64(bytes.size()));
    }
    const QString picture = QDir(QCoreApplication::applicationDirPath()).filePath("studio_screenshot.png");
    QFile::remove(picture);
    QProcess studio;
    startStudio(studio, {"--screenshot", picture, model}, dir.filePath("config"));
    QVERIFY(studio.waitForFinished(180'000));
    QVERIFY2(studio.exitStatus() == QProcess::NormalExit && studio.exitCode() == 0,
             studio.readAllStandardError().constData());

    const QImage image(picture);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() >= 1200 && image.height() >= 800);
    QSet<QRgb> colours;
    const QRgb background = image.pixel(image.width() / 2, image.height() - 40);
    qint64 foreground = 0;
    for (int y = 0; y < image.height(); y += 2)
      for (int x = 0; x < image.width(); x += 2) {
        const QRgb pixel = image.pixel(x, y);
        colours.insert(pixel);
        foreground += pixel != background;
      }
    QVERIFY2(colours.size() > 500, qPrintable(QStringLiteral("only %1 colours").arg(colours.size())));
    const double share = double(foreground) / (double(image.width() / 2) * double(image.height() / 2));
    QVERIFY2(share > 0.15, qPrintable(QStringLiteral("only %1 of the pixels differ from the background").arg(share)));
  }

  // --build fp16 --panel timing: builds, profiles and compares the bundled sample, then shows the
  // timings with the graph coloured by layer time. The PNG stays in the build folder.
  void screenshotShowsTheEnginePanels() {
    QTemporaryDir dir;
    const QString picture = QDir(QCoreApplication::applicationDirPath()).filePath("studio_timings.png");
    QFile::remove(picture);
    QProcess studio;
    startStudio(studio, {"--screenshot", picture, KILN_SAMPLE_MODEL, "--build", "fp16", "--panel", "timing"},
                dir.filePath("config"));
    QVERIFY(studio.waitForFinished(280'000));
    QVERIFY2(studio.exitStatus() == QProcess::NormalExit && studio.exitCode() == 0,
             studio.readAllStandardError().constData());
    const QImage image(picture);
    QVERIFY(!image.isNull() && image.width() >= 1200);
  }

  void missingModelFailsWithMessage() {
    QProcess studio;
    startStudio(studio, {"--screenshot", "/tmp/unused.png", "/nonexistent/model.onnx"});
    QVERIFY(studio.waitForFinished(60'000));
    QVERIFY(studio.exitCode() != 0);
    QVERIFY(studio.readAllStandardError().contains("does not exist"));
  }
};

QTEST_MAIN(ScreenshotTest)
#include "screenshot_test.moc"
