// kiln-studio [MODEL]                       opens MODEL (or, on first start, the bundled sample)
// kiln-studio --screenshot FILE [MODEL]     loads and lays out MODEL, saves the window to FILE, exits
//   --build PRECISION                        ... first builds an engine (fp32, fp16, bf16, int8), profiles it
//                                            and compares it with FP32
//   --calib-data PATH                        ... int8's calibration data (.npy files or images)
//   --panel build|fusion|timing|accuracy|precision
//                                            ... and shows that panel (fusion by default), the graph
//                                            coloured by layer time (timing), error (accuracy) or, after
//                                            the quantization advisor ran, each layer's error alone
//                                            (precision)
#include "document.h"
#include "engine_panels.h"
#include "main_window.h"

#include <accuracy/precision_debug_panel.h>
#include <building/build_panel.h>
#include <building/calibration_settings.h>
#include <fusion/engine_layer_model.h>
#include <fusion/fusion_panel.h>

#include <graph/graph_scene.h>
#include <graph/graph_view.h>

#include <kiln/crash_report.h>
#include <kiln/host_memory.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QLineEdit>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>

#include <cstdio>
#include <functional>

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

// The engine layer with the most fused ONNX nodes: the fusion view's best example.
int mostFusedLayer(const kiln::views::FusionPanel& fusion) {
  const auto& layers = fusion.layerModel()->layers();
  int best = -1;
  for (size_t l = 0; l < layers.size(); ++l)
    if (best < 0 || layers[l].origins.size() > layers[size_t(best)].origins.size()) best = int(l);
  return best;
}

struct ScreenshotOptions {
  QString file, model, buildPrecision, panel, calibrationData;
};

// Shows the engine panel the screenshot is about, once build, profile and comparison are done.
void presentPanel(MainWindow& window, const QString& panel) {
  EnginePanels& engine = *window.engine();
  window.graphView()->fitGraph();
  if (panel == "build") {
    engine.raise(engine.buildDock());
  } else if (panel == "timing") {
    engine.raise(engine.timingDock());
    engine.showHeatmap(EnginePanels::Heatmap::kTime);
  } else if (panel == "accuracy") {
    engine.raise(engine.accuracyDock());
    engine.showHeatmap(EnginePanels::Heatmap::kError);
  } else if (panel == "precision") {
    engine.raise(engine.precisionDock());
    engine.showHeatmap(EnginePanels::Heatmap::kPrecision);
  } else {
    engine.raise(engine.fusionDock());
    engine.fusionPanel()->selectLayer(mostFusedLayer(*engine.fusionPanel()));
  }
  // The last job's message (the comparison's) belongs to the accuracy panel only.
  if (panel != "accuracy" && panel != "precision") window.statusBar()->clearMessage();
}

// Builds, profiles and compares (each in the background, one after another), then calls `done`.
void buildProfileAndCompare(MainWindow& window, const ScreenshotOptions& options, const std::function<void()>& done) {
  EnginePanels& engine = *window.engine();
  EngineController* controller = engine.controller();
  const QString& precision = options.buildPrecision;
  engine.buildPanel()->setPrecisionAllowed(kiln::Precision::kFP16, precision == "fp16");
  engine.buildPanel()->setPrecisionAllowed(kiln::Precision::kBF16, precision == "bf16");
  engine.buildPanel()->setPrecisionAllowed(kiln::Precision::kINT8, precision == "int8");
  if (precision == "int8") engine.buildPanel()->calibrationSettings()->dataEdit()->setText(options.calibrationData);
  QObject::connect(controller, &EngineController::buildFinished, &window, [&engine] { engine.startProfile(); },
                   Qt::SingleShotConnection);
  QObject::connect(controller, &EngineController::profileFinished, &window, [&engine] { engine.startComparison(); },
                   Qt::SingleShotConnection);
  QObject::connect(controller, &EngineController::comparisonFinished, &window, done, Qt::SingleShotConnection);
  engine.startBuild();
}

int takeScreenshot(QApplication& app, MainWindow& window, const ScreenshotOptions& options) {
  const QString& file = options.file;
  const QString& model = options.model;
  int status = 1;
  auto fail = [&](const QString& message) {
    std::fprintf(stderr, "kiln-studio: %s\n", qPrintable(message));
    app.exit(1);
  };
  auto grab = [&] {
    QTimer::singleShot(600, &window, [&] {
      if (window.grab().save(file)) {
        status = 0;
        app.exit(0);
      } else {
        fail(QStringLiteral("could not write %1; choose a writable path ending in .png").arg(file));
      }
    });
  };
  auto save = [&] {
    if (!options.buildPrecision.isEmpty()) {
      buildProfileAndCompare(window, options, [&] {
        if (options.panel != "precision") {
          presentPanel(window, options.panel);
          return grab();
        }
        EnginePanels& engine = *window.engine();
        QObject::connect(engine.controller(), &EngineController::adviceFinished, &window, [&] {
          presentPanel(window, options.panel);
          grab();
        }, Qt::SingleShotConnection);
        engine.startAdvice();
      });
      return;
    }
    window.graphView()->fitGraph();
    if (int node = firstWeightedLayer(window.scene()->structure()); node >= 0) window.scene()->revealNode(node);
    grab();
  };
  window.engine()->setDialogsEnabled(false);
  QObject::connect(window.engine()->controller(), &EngineController::jobFailed, &window,
                   [&](EngineController::Job, const QString& message) { fail(message); });
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
  kiln::installCrashReport("kiln-studio");
  kiln::keepFreedHostMemory();
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Kiln"));
  QApplication::setApplicationName(QStringLiteral("Kiln Studio"));
  QApplication::setApplicationVersion(QStringLiteral(KILN_VERSION));
  QApplication::setDesktopFileName(QStringLiteral("kiln-studio"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Looks inside ONNX models and the engines Kiln builds from them."));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption build(QStringLiteral("build"),
                           QStringLiteral("With --screenshot: build an engine in PRECISION (fp32, fp16, bf16, int8), "
                                          "profile it and compare it with FP32 before the picture."),
                           QStringLiteral("PRECISION"));
  QCommandLineOption calibrationData(QStringLiteral("calib-data"),
                                     QStringLiteral("With --build int8: the calibration data (a folder of .npy files "
                                                    "or PNG / JPEG images, or one .npy file)."),
                                     QStringLiteral("PATH"));
  QCommandLineOption panel(QStringLiteral("panel"),
                           QStringLiteral("With --build: the panel to show (build, fusion, timing, accuracy, precision: "
                                          "after the quantization advisor)."),
                           QStringLiteral("PANEL"), QStringLiteral("fusion"));
  parser.addOption(build);
  parser.addOption(calibrationData);
  parser.addOption(panel);
  QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                QStringLiteral("Load and lay out MODEL, save the window to FILE (PNG) and exit."),
                                QStringLiteral("FILE"));
  parser.addOption(screenshot);
  parser.addPositionalArgument(QStringLiteral("MODEL"), QStringLiteral("The ONNX model to open."), QStringLiteral("[MODEL]"));
  parser.process(app);
  const QString model = parser.positionalArguments().value(0);

  MainWindow window;
  if (parser.isSet(screenshot)) {
    const QString precision = parser.value(build);
    if (!precision.isEmpty() && !QStringList{"fp32", "fp16", "bf16", "int8"}.contains(precision)) {
      std::fprintf(stderr, "kiln-studio: --build takes fp32, fp16, bf16 or int8, not %s\n", qPrintable(precision));
      return 1;
    }
    if ((precision == "int8") != parser.isSet(calibrationData)) {
      std::fprintf(stderr, "kiln-studio: --build int8 needs --calib-data PATH, and --calib-data needs --build int8\n");
      return 1;
    }
    return takeScreenshot(app, window,
                          {parser.value(screenshot), model, precision, parser.value(panel), parser.value(calibrationData)});
  }

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
