// The engine panels in the real window on the bundled TinyResNet (Conv+BN+Relu chains that fuse):
// a build cancelled from the panel leaves no files and a finished one saves a loadable plan; the
// fusion view maps engine layers to graph nodes both ways; a local profile fills the timings; an
// fp16 engine differs from FP32 by small, non-zero errors that pass loose tolerances only; a
// profile JSON opens through File ▸ Open.
#include "document.h"
#include "engine_panels.h"
#include "main_window.h"

#include <accuracy/accuracy_panel.h>
#include <accuracy/tensor_metrics_model.h>
#include <building/build_panel.h>
#include <fusion/engine_layer_model.h>
#include <fusion/fusion_panel.h>
#include <graph/graph_scene.h>
#include <graph/node_item.h>
#include <timing/layer_timing_model.h>
#include <timing/timing_panel.h>

#include <kiln/runtime.h>

#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QCheckBox>
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
};

QTEST_MAIN(EnginePanelsTest)
#include "engine_panels_test.moc"
