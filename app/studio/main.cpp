// kiln-studio [MODEL]                       opens MODEL (or, on first start, the bundled sample)
// kiln-studio --screenshot FILE [MODEL]     loads and lays out MODEL, saves the window to FILE, exits
#include "document.h"
#include "main_window.h"

#include <graph/graph_scene.h>
#include <graph/graph_view.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QTimer>

#include <cstdio>

namespace {

constexpr int kScreenshotTimeoutMs = 120'000;

QString bundledSampleModel() {
  const QStringList candidates = {
      QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("../share/kiln/models/sample.onnx")),
      QStringLiteral(KILN_SOURCE_MODELS_DIR "/sample.onnx")};
  for (const QString& path : candidates)
    if (QFileInfo(path).isFile()) return path;
  return {};
}

// The first layer with weights, so a screenshot shows the inspector with its histogram.
int firstWeightedLayer(const kiln::views::GraphStructure& structure) {
  for (size_t n = 0; n < structure.nodes().size(); ++n) {
    const auto& node = structure.nodes()[n];
    if (!node.layer) continue;
    for (const std::string& input : node.layer->inputs) {
      const kiln::Tensor* tensor = input.empty() ? nullptr : node.network->findTensor(input);
      if (tensor && tensor->isConstant()) return int(n);
    }
  }
  return -1;
}

int takeScreenshot(QApplication& app, MainWindow& window, const QString& file, const QString& model) {
  int status = 1;
  auto fail = [&](const QString& message) {
    std::fprintf(stderr, "kiln-studio: %s\n", qPrintable(message));
    app.exit(1);
  };
  auto save = [&] {
    window.graphView()->fitGraph();
    if (int node = firstWeightedLayer(window.scene()->structure()); node >= 0) window.scene()->revealNode(node);
    QTimer::singleShot(300, &window, [&] {
      if (window.grab().save(file)) {
        status = 0;
        app.exit(0);
      } else {
        fail(QStringLiteral("could not write %1; choose a writable path ending in .png").arg(file));
      }
    });
  };
  QObject::connect(window.document(), &Document::loadFailed, &window,
                   [&](const QString&, const QString& message) { fail(QStringLiteral("could not open the model: ") + message); });
  QObject::connect(window.scene(), &kiln::views::GraphScene::layoutFailed, &window, fail);
  QObject::connect(window.scene(), &kiln::views::GraphScene::layoutFinished, &window, save,
                   Qt::SingleShotConnection);
  QTimer::singleShot(kScreenshotTimeoutMs, &window, [&] { fail(QStringLiteral("timed out loading the model")); });
  window.resize(1600, 1000);
  window.show();
  if (model.isEmpty()) {
    // Nothing to load: the empty window is the picture.
    QTimer::singleShot(300, &window, save);
  } else if (QFileInfo(model).isFile()) {
    window.document()->open(model);
  } else {
    std::fprintf(stderr, "kiln-studio: %s does not exist\n", qPrintable(model));
    return 1;
  }
  app.exec();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Kiln"));
  QApplication::setApplicationName(QStringLiteral("Kiln Studio"));
  QApplication::setApplicationVersion(QStringLiteral(KILN_VERSION));
  QApplication::setDesktopFileName(QStringLiteral("kiln-studio"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Looks inside ONNX models and the engines Kiln builds from them."));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                QStringLiteral("Load and lay out MODEL, save the window to FILE (PNG) and exit."),
                                QStringLiteral("FILE"));
  parser.addOption(screenshot);
  parser.addPositionalArgument(QStringLiteral("MODEL"), QStringLiteral("The ONNX model to open."), QStringLiteral("[MODEL]"));
  parser.process(app);
  const QString model = parser.positionalArguments().value(0);

  MainWindow window;
  if (parser.isSet(screenshot)) return takeScreenshot(app, window, parser.value(screenshot), model);

  window.show();
  QSettings settings;
  if (!model.isEmpty()) {
    window.openModel(model);
  } else if (!settings.value(QStringLiteral("firstStartDone")).toBool()) {
    if (QString sample = bundledSampleModel(); !sample.isEmpty()) window.openModel(sample);
  }
  settings.setValue(QStringLiteral("firstStartDone"), true);
  return app.exec();
}
