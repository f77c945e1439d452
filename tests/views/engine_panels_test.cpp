// The engine panels in the real window on the bundled TinyResNet (Conv+BN+Relu chains that fuse):
// a build cancelled from the panel leaves no files and a finished one saves a loadable plan; the
// fusion view maps engine layers to graph nodes both ways; a local profile fills the timings; an
// fp16 engine differs from FP32 by small, non-zero errors that pass loose tolerances only; a
// profile JSON opens through File ▸ Open. INT8: an engine calibrated from a folder of images sits
// beside the FP32 and FP16 ones in the accuracy panel (cosine, relative L2, max |error| a column
// each); the precision bisect and the advisor run with one click each, colour the graph (held-back
// layers with a legend of named colours; per-layer error on the heat scale) and cancel cleanly.
#include "document.h"
#include "engine_panels.h"
#include "main_window.h"

#include <accuracy/accuracy_panel.h>
#include <accuracy/engine_comparison_model.h>
#include <accuracy/precision_debug_panel.h>
#include <accuracy/precision_layer_model.h>
#include <accuracy/tensor_metrics_model.h>
#include <building/build_panel.h>
#include <building/calibration_settings.h>
#include <fusion/engine_layer_model.h>
#include <fusion/fusion_panel.h>
#include <graph/graph_scene.h>
#include <graph/node_item.h>
#include <timing/layer_timing_model.h>
#include <timing/timing_panel.h>

#include <kiln/runtime.h>

#include <QDir>
#include <QImage>
#include <QRandomGenerator>
#include <QSettings>
#include <QLabel>
#include <QLineEdit>
#include <QCheckBox>
#include <QComboBox>
#include <QTableView>
#include <QAbstractItemModelTester>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <numeric>

namespace {

constexpr int kJobTimeoutMs = 240'000;

QStringList filesIn(const QString& folder) { return QDir(folder).entryList(QDir::Files | QDir::Hidden); }

}  // namespace

class EnginePanelsTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();  // an earlier run's INT8 settings name a calibration folder that is gone
    window_ = std::make_unique<MainWindow>();
    window_->engine()->setDialogsEnabled(false);
    QSignalSpy laidOut(window_->scene(), &kiln::views::GraphScene::layoutFinished);
    window_->openModel(KILN_SAMPLE_MODEL);
    QVERIFY(laidOut.wait(60'000));
    QVERIFY(window_->engine()->buildPanel()->canBuild());
    // Before a build the engine panels show hints only, no empty tables.
    kiln::views::FusionPanel* fusion = window_->engine()->fusionPanel();
    QVERIFY(!fusion->findChild<QTableView*>()->isVisibleTo(fusion));
  }

  void cancelledBuildLeavesNoFiles() {
    QTemporaryDir dir;
    EnginePanels& engine = *window_->engine();
    auto* panel = engine.buildPanel();
    QSignalSpy cancelled(engine.controller(), &EngineController::jobCancelled);
    QSignalSpy finished(engine.controller(), &EngineController::buildFinished);
    setTimingCache(dir.filePath("timing.cache"));
    panel->buildButton()->click();
    QVERIFY(engine.controller()->isBusy());
    QVERIFY(panel->cancelButton()->isEnabled());
    QVERIFY(!panel->buildButton()->isEnabled());  // one build at a time
    panel->cancelButton()->click();  // before the builder's first progress check
    QVERIFY(cancelled.wait(kJobTimeoutMs));
    QCOMPARE(finished.count(), 0);
    QVERIFY(!engine.controller()->isBusy());
    QVERIFY(panel->logText().contains("cancelled"));
    QCOMPARE(filesIn(dir.path()), QStringList());
    QVERIFY(!window_->document()->built());
    QVERIFY(panel->buildButton()->isEnabled());
  }

  void finishedBuildSavesALoadablePlan() {
    QTemporaryDir dir;
    setTimingCache({});
    buildEngine(kiln::Precision::kFP32);
    QVERIFY(window_->engine()->buildPanel()->logText().contains("pass "));
    const QString plan = dir.filePath("sample.plan");
    window_->document()->savePlan(plan);
    QCOMPARE(filesIn(dir.path()), QStringList{"sample.plan"});  // the temporary file is gone
    const auto engine = kiln::Runtime().loadFile(plan.toStdString());
    QCOMPARE(engine->report().layers.size(), window_->document()->built()->report.layers.size());
  }

  void fusionSelectionMapsBothWays() {
    buildEngine(kiln::Precision::kFP32);
    kiln::views::FusionPanel& fusion = *window_->engine()->fusionPanel();
    kiln::views::GraphScene& scene = *window_->scene();
    QAbstractItemModelTester tester(fusion.layerModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(fusion.findChild<QTableView*>()->isVisibleTo(&fusion));
    const auto& layers = fusion.layerModel()->layers();
    QVERIFY(layers.size() < size_t(scene.structure().layerCount()));  // fusion shrank the graph
    const int stem = fusion.layerModel()->rowOfLayer("stem/Conv");
    QVERIFY(stem >= 0);
    const auto& origins = layers[size_t(stem)].origins;
    for (const char* node : {"stem/Conv", "stem/BatchNormalization", "stem/Relu"})
      QVERIFY2(std::find(origins.begin(), origins.end(), node) != origins.end(), node);

    // Engine layer -> graph: its ONNX nodes are outlined.
    fusion.selectLayer(stem);
    std::set<int> expected;
    for (const auto& name : origins) expected.insert(scene.nodeNamed(name));
    QCOMPARE(scene.highlightedNodes(), expected);
    QCOMPARE(scene.itemShowing(scene.nodeNamed("stem/Relu"))->isHighlighted(), true);

    // Graph -> engine layer: a node fused elsewhere selects its layer.
    const int block = fusion.layerModel()->rowOfLayer("layer1.0/Conv");
    QVERIFY(block >= 0 && block != stem);
    scene.revealNode(scene.nodeNamed("layer1.0/BatchNormalization"));
    QTRY_COMPARE(fusion.selectedLayer(), block);
    QVERIFY(scene.highlightedNodes().count(scene.nodeNamed("layer1.0/Relu")));
    QVERIFY(!scene.highlightedNodes().count(scene.nodeNamed("stem/Relu")));
  }

  void localProfileFillsTimingsAndHeatmap() {
    buildEngine(kiln::Precision::kFP32);
    EnginePanels& engine = *window_->engine();
    QSignalSpy profiled(engine.controller(), &EngineController::profileFinished);
    engine.startProfile();
    QVERIFY(profiled.wait(kJobTimeoutMs));
    kiln::views::TimingPanel& timing = *engine.timingPanel();
    QCOMPARE(size_t(timing.model()->rowCount()), window_->document()->built()->report.layers.size());
    timing.heatmapBox()->setChecked(true);
    QVERIFY(window_->scene()->hasHeatmap());
    QVERIFY(window_->scene()->heatmap().count(window_->scene()->nodeNamed("stem/BatchNormalization")));
    timing.heatmapBox()->setChecked(false);
    QVERIFY(!window_->scene()->hasHeatmap());
  }

  void fp16EngineIsCloseToFp32() {
    buildEngine(kiln::Precision::kFP16);
    EnginePanels& engine = *window_->engine();
    kiln::views::AccuracyPanel& accuracy = *engine.accuracyPanel();
    QAbstractItemModelTester tester(accuracy.outputModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy compared(engine.controller(), &EngineController::comparisonFinished);
    engine.startComparison();
    QVERIFY(compared.wait(kJobTimeoutMs));
    const auto& outputs = accuracy.outputModel()->metrics();
    QCOMPARE(outputs.size(), size_t(1));
    const kiln::TensorMetrics probabilities = outputs.front();  // a copy: setTolerance re-evaluates the rows
    QCOMPARE(probabilities.name, std::string("probabilities"));
    QVERIFY2(probabilities.maxAbsError > 0, "fp16 activations should change the result a little");
    QVERIFY2(probabilities.maxAbsError < 1e-2, qPrintable(QString::number(probabilities.maxAbsError)));
    QVERIFY(probabilities.cosineSimilarity > 0.999);
    QVERIFY(accuracy.layerModel()->rowCount() > 5);  // per-layer errors

    accuracy.setTolerance({1e-2, 1e-2});
    QVERIFY(accuracy.passes());
    QVERIFY(accuracy.verdictLabel()->text().contains("PASS"));
    accuracy.setTolerance({0, 0});
    QVERIFY(!accuracy.passes());
    QVERIFY(accuracy.verdictLabel()->text().contains("FAIL"));
    QVERIFY(accuracy.outputModel()->metrics().front().failing > 0);
    const auto histogram = accuracy.shownHistogram();
    QCOMPARE(std::accumulate(histogram.begin(), histogram.end(), int64_t(0)), probabilities.elements);

    accuracy.heatmapBox()->setChecked(true);
    QVERIFY(window_->scene()->hasHeatmap());
    QVERIFY(window_->scene()->heatmapTitle().contains("error"));
  }

  void int8EngineSitsBesideFp32AndFp16() {
    // Kept for the next test: the precision tools calibrate again from it.
    images_ = std::make_unique<QTemporaryDir>();
    const QTemporaryDir& images = *images_;
    QRandomGenerator random(3);
    for (int k = 0; k < 6; ++k) {
      QImage image(72 + 6 * k, 64 + 9 * k, QImage::Format_RGB888);
      for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
          image.setPixel(x, y, qRgb(int(random.bounded(256)), (3 * x + y) % 256, int(random.bounded(128)) + 64));
      QVERIFY(image.save(images.filePath(QStringLiteral("photo%1.%2").arg(k).arg(k % 2 ? "jpg" : "png"))));
    }
    EnginePanels& engine = *window_->engine();
    buildEngine(kiln::Precision::kFP32);
    buildEngine(kiln::Precision::kFP16);
    engine.buildPanel()->setPrecisionAllowed(kiln::Precision::kFP16, false);
    engine.buildPanel()->precisionBox(kiln::Precision::kINT8)->setChecked(true);
    engine.buildPanel()->calibrationSettings()->dataEdit()->setText(images.path());
    engine.buildPanel()->calibrationSettings()->calibratorBox()->setCurrentIndex(1);  // minmax
    buildEngine(kiln::Precision::kINT8);
    QCOMPARE(window_->document()->built()->report.calibration.batches, int64_t(6));  // the table's opt batch, 1
    QCOMPARE(window_->document()->engines().size(), size_t(3));

    QSignalSpy compared(engine.controller(), &EngineController::enginesCompared);
    engine.accuracyPanel()->compareEnginesButton()->click();
    QVERIFY(compared.wait(kJobTimeoutMs));
    const kiln::views::EngineComparisonModel& model = *engine.accuracyPanel()->engineModel();
    QAbstractItemModelTester tester(engine.accuracyPanel()->engineModel(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.columnCount(), kiln::views::EngineComparisonModel::kFirstEngine + 3);
    QCOMPARE(model.rowCount(), int(kiln::views::EngineComparisonModel::kMetricCount));  // one output
    QCOMPARE(model.headerData(kiln::views::EngineComparisonModel::kFirstEngine + 2, Qt::Horizontal).toString(),
             QStringLiteral("int8 engine"));
    using Metric = kiln::views::EngineComparisonModel::Metric;
    const double fp32Error = model.value("probabilities", Metric::kMaxAbs, 0);
    const double fp16Error = model.value("probabilities", Metric::kMaxAbs, 1);
    const double int8Error = model.value("probabilities", Metric::kMaxAbs, 2);
    QVERIFY2(fp32Error < 1e-5, qPrintable(QString::number(fp32Error)));
    QVERIFY2(fp16Error > 0 && int8Error > fp16Error, qPrintable(QStringLiteral("%1 %2").arg(fp16Error).arg(int8Error)));
    QVERIFY(model.value("probabilities", Metric::kCosine, 2) > 0.99);
    qInfo("measured max |error| fp32 %.3g, fp16 %.3g, int8 %.3g; int8 cosine %.7f, rel. L2 %.3g", fp32Error, fp16Error,
          int8Error, model.value("probabilities", Metric::kCosine, 2), model.value("probabilities", Metric::kRelativeL2, 2));
    QVERIFY(model.value("probabilities", Metric::kRelativeL2, 2) > model.value("probabilities", Metric::kRelativeL2, 1));
  }

  void precisionToolsRunWithOneClickAndColourTheGraph() {
    EnginePanels& engine = *window_->engine();
    QCOMPARE(window_->document()->built()->precision, QStringLiteral("int8"));
    kiln::views::PrecisionDebugPanel& panel = *engine.precisionPanel();
    kiln::views::GraphScene& scene = *window_->scene();
    QVERIFY(panel.bisectButton()->isEnabled());

    // Cancel: the first trial's progress stops the bisect, and the panel says so.
    QSignalSpy cancelled(engine.controller(), &EngineController::jobCancelled);
    QSignalSpy failed(engine.controller(), &EngineController::jobFailed);
    connect(engine.controller(), &EngineController::precisionProgress, panel.cancelButton(), &QPushButton::click,
            Qt::SingleShotConnection);
    panel.bisectButton()->click();
    QVERIFY(cancelled.wait(kJobTimeoutMs) || !failed.isEmpty());
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.front().at(1).toString()));
    QVERIFY2(panel.statusText().startsWith("Cancelled"), qPrintable(panel.statusText()));
    QVERIFY(!panel.hasResult());

    // A criterion int8 misses (its softmax outputs keep cosines near 1 whatever the error, so the
    // tolerances): some layers must be held back, and they are coloured.
    engine.accuracyPanel()->setTolerance({1e-5, 1e-4});
    panel.setToleranceCriterion();
    QSignalSpy bisected(engine.controller(), &EngineController::bisectFinished);
    QVERIFY(panel.bisectButton()->isEnabled());
    panel.bisectButton()->click();
    QVERIFY(bisected.wait(kJobTimeoutMs) || !failed.isEmpty());
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.front().at(1).toString()));
    QVERIFY2(panel.trialCount() > 2, qPrintable(panel.statusText()));
    int kept = 0;
    for (const auto& row : panel.layerModel()->rows()) kept += row.keep;
    QVERIFY2(kept > 0, qPrintable(panel.statusText()));
    qInfo("measured bisect: %s", qPrintable(panel.statusText()));
    QVERIFY(scene.hasHeatmap());
    QVERIFY2(scene.heatmapTitle().contains("hold back"), qPrintable(scene.heatmapTitle()));
    QCOMPARE(scene.heatmapCategories().size(), size_t(2));
    for (const auto& row : panel.layerModel()->rows()) {
      const int node = scene.nodeNamed(row.name);
      if (node < 0 || !scene.heatmap().count(node)) continue;
      QCOMPARE(scene.heatmap().at(node).fraction > 0.5, row.keep);
    }

    // The advisor: every int8 layer ranked by its error alone, on a continuous scale.
    QSignalSpy advised(engine.controller(), &EngineController::adviceFinished);
    panel.adviseButton()->click();
    QVERIFY(advised.wait(kJobTimeoutMs) || !failed.isEmpty());
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.front().at(1).toString()));
    const auto& rows = panel.layerModel()->rows();
    QCOMPARE(rows.size(), size_t(10));  // the sample's convolutions and its Gemm
    QVERIFY(rows.front().error >= rows.back().error && rows.front().error > 0);
    QVERIFY(scene.hasHeatmap());
    QVERIFY(scene.heatmapCategories().empty());
    QVERIFY2(scene.heatmapTitle().contains("only this layer in int8 (tolerance ratio)"), qPrintable(scene.heatmapTitle()));
    qInfo("measured advice: %s", qPrintable(panel.statusText()));
  }

  void profileJsonOpensFromTheFileMenu() {
    QTemporaryDir dir;
    kiln::ProfileReport report;
    report.plan.backend = "cpu";
    report.iterations = 5;
    report.totalMedianMs = 2;
    report.layers = {{"stem/Conv", "kiln.FusedConv", "cpu.conv", "fp32", 1.5, 1.5, 1.5, 75},
                     {"head/Gemm", "Gemm", "cpu.gemm", "fp32", 0.5, 0.5, 0.5, 25}};
    QFile file(dir.filePath("remote.json"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QByteArray::fromStdString(report.toJson()));
    file.close();
    window_->openFile(file.fileName());
    const QAbstractItemModel* table = window_->engine()->timingPanel()->table()->model();
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(table->data(table->index(0, kiln::views::LayerTimingModel::kPercent)).toString(), QStringLiteral("75.0 %"));
  }

  void cleanupTestCase() { window_.reset(); }

 private:
  void setTimingCache(const QString& path) {
    // The panel's own line edit: the setting a person would type.
    auto* edit = window_->engine()->buildPanel()->findChild<QLineEdit*>("timingCache");
    QVERIFY(edit);
    edit->setText(path);
  }

  void buildEngine(kiln::Precision precision) {
    EnginePanels& engine = *window_->engine();
    engine.buildPanel()->setPrecisionAllowed(kiln::Precision::kFP16, precision == kiln::Precision::kFP16);
    QSignalSpy finished(engine.controller(), &EngineController::buildFinished);
    QSignalSpy failed(engine.controller(), &EngineController::jobFailed);
    engine.buildPanel()->buildButton()->click();
    QVERIFY(finished.wait(kJobTimeoutMs) || !failed.isEmpty());
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.front().at(1).toString()));
    QVERIFY(window_->document()->built());
    QCOMPARE(window_->document()->built()->precision, QString::fromLatin1(kiln::toString(precision)));
  }

  std::unique_ptr<MainWindow> window_;
  std::unique_ptr<QTemporaryDir> images_;
};

QTEST_MAIN(EnginePanelsTest)
#include "engine_panels_test.moc"
