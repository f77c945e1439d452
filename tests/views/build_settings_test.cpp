// The Build panel's tactic settings and its view of a running build: optimisation level, tactic
// sources and CUDA graphs into the BuilderConfig (and QSettings); image inputs with dynamic height
// and width start at a real image size, from the model's metadata or 224; the current layer and
// tactic shown while a background build tunes, and Cancel stopping it mid-tuning with no timing
// cache written.
#include "engine_controller.h"

#include <building/build_panel.h>
#include <building/profile_range_model.h>

#include <kiln/onnx_importer.h>

#include "common/test_models.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QDir>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <array>
#include <map>

using namespace kiln::views;
using kiln::test::ModelBuilder;

namespace {

using namespace kiln::test::onnx_types;

constexpr int kJobTimeoutMs = 240'000;

// One Relu over an input of these symbolic / fixed dims, with optional metadata.
std::shared_ptr<kiln::Network> reluModel(const std::vector<std::string>& dims,
                                         const std::map<std::string, std::string>& metadata = {}) {
  ModelBuilder mb;
  mb.symbolicInput("x", kFloat, dims);
  mb.node("Relu", {"x"}, {"y"});
  mb.output("y");
  for (const auto& [key, value] : metadata) {
    auto* entry = mb.model().add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  return kiln::OnnxImporter().importBytes(mb.bytes());
}

// (min, opt, max) of a row of the profile table.
std::array<qlonglong, 3> rangeOf(const ProfileRangeModel& model, int row) {
  auto value = [&](int column) { return model.data(model.index(row, column)).toLongLong(); };
  return {value(ProfileRangeModel::kMin), value(ProfileRangeModel::kOpt), value(ProfileRangeModel::kMax)};
}

using Range = std::array<qlonglong, 3>;

}  // namespace

class BuildSettingsTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void init() { QSettings().clear(); }

  void imageInputsStartAtARealImageSize() {
    ProfileRangeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);

    auto nchw = reluModel({"N", "3", "H", "W"});
    model.setNetwork(nchw.get());
    QCOMPARE(model.rowCount(), 4);
    QCOMPARE(rangeOf(model, 0), (Range{1, 1, ProfileRangeModel::kDefaultMax}));  // the batch
    QCOMPARE(rangeOf(model, 2), (Range{224, 224, 224}));
    QCOMPARE(rangeOf(model, 3), (Range{224, 224, 224}));
    QVERIFY(model.isValid());
    // The user can still change it before building.
    QVERIFY(model.setData(model.index(2, ProfileRangeModel::kMax), 512));
    QVERIFY(model.setData(model.index(2, ProfileRangeModel::kMin), 128));
    QVERIFY(model.isValid());
    const kiln::ShapeRange range = model.profile().inputs.at("x");
    QCOMPARE(range.min, (std::vector<int64_t>{1, 3, 128, 224}));
    QCOMPARE(range.max, (std::vector<int64_t>{8, 3, 512, 224}));

    auto stated = reluModel({"N", "3", "H", "W"}, {{"Image_Size", "[3, 320, 256]"}});
    model.setNetwork(stated.get());
    QCOMPARE(rangeOf(model, 2), (Range{320, 320, 320}));
    QCOMPARE(rangeOf(model, 3), (Range{256, 256, 256}));

    auto nhwc = reluModel({"N", "H", "W", "3"});
    model.setNetwork(nhwc.get());
    QCOMPARE(rangeOf(model, 1), (Range{224, 224, 224}));
    QCOMPARE(rangeOf(model, 2), (Range{224, 224, 224}));

    // One channel is no image unless the metadata says what size it takes.
    auto gray = reluModel({"N", "1", "H", "W"});
    model.setNetwork(gray.get());
    QCOMPARE(rangeOf(model, 2), (Range{1, 1, ProfileRangeModel::kDefaultMax}));
    auto grayStated = reluModel({"N", "1", "H", "W"}, {{"imgsz", "96"}});
    model.setNetwork(grayStated.get());
    QCOMPARE(rangeOf(model, 2), (Range{96, 96, 96}));
    QCOMPARE(rangeOf(model, 3), (Range{96, 96, 96}));

    // Sequences keep the small default.
    auto tokens = reluModel({"N", "S"});
    model.setNetwork(tokens.get());
    QCOMPARE(rangeOf(model, 1), (Range{1, 1, ProfileRangeModel::kDefaultMax}));
  }

  void tacticSettingsReachTheConfigAndAreRemembered() {
    auto network = reluModel({"N", "3", "H", "W"});
    {
      BuildPanel panel;
      panel.setNetwork(network.get());
      QCOMPARE(panel.config().optimizationLevel, 3);
      QVERIFY(panel.config().disabledTacticSources.empty());
      panel.optimizationLevelBox()->setValue(5);
      // The CPU backend is chosen (no GPU here): only the CPU source and no CUDA graphs apply.
      QVERIFY(panel.tacticSourceBox("cpu")->isEnabled());
      QVERIFY(!panel.tacticSourceBox("cudnn")->isEnabled());
      QVERIFY(!panel.tacticSourceBox("cublaslt")->isEnabled());
      QVERIFY(!panel.cudaGraphsBox()->isEnabled());
      panel.cudaGraphsBox()->setChecked(true);
      panel.tacticSourceBox("cudnn")->setChecked(false);
      panel.tacticSourceBox("cuda")->setChecked(false);
      const kiln::BuilderConfig config = panel.config();
      QCOMPARE(config.optimizationLevel, 5);
      QCOMPARE(config.disabledTacticSources, (std::vector<std::string>{"cudnn", "cuda"}));
      QVERIFY(!config.cudaGraphs);  // not for a CPU engine
      // The profile table took the image size.
      QCOMPARE(config.profiles.at(0).inputs.at("x").opt, (std::vector<int64_t>{1, 3, 224, 224}));
      panel.saveSettings();
    }
    BuildPanel again;
    again.setNetwork(network.get());
    QCOMPARE(again.config().optimizationLevel, 5);
    QCOMPARE(again.config().disabledTacticSources, (std::vector<std::string>{"cudnn", "cuda"}));
    QVERIFY(again.cudaGraphsBox()->isChecked());
  }

  void backgroundBuildShowsLayerAndTacticAndCancelsMidTuning() {
    QTemporaryDir dir;
    auto network = kiln::OnnxImporter().importBytes(kiln::test::convReluStack(8, 24, 40).bytes());
    BuildPanel panel;
    panel.setNetwork(network.get());
    EngineController controller;
    connect(&controller, &EngineController::jobStarted, &panel, &BuildPanel::buildStarted);
    connect(&controller, &EngineController::buildProgress, &panel, &BuildPanel::showProgress);
    connect(&controller, &EngineController::jobCancelled, &panel, &BuildPanel::buildCancelled);
    connect(&panel, &BuildPanel::cancelRequested, &controller, &EngineController::cancel);
    QString shownWhileTuning;
    connect(&controller, &EngineController::buildProgress, this,
            [&](double, const QString& phase, const QString& layer, const QString& tactic) {
              // Cancel from the panel at the first tactic timed, as a user would.
              if (!shownWhileTuning.isEmpty() || phase != "tactics" || tactic.isEmpty()) return;
              shownWhileTuning = panel.phaseText();
              QVERIFY(shownWhileTuning.contains(layer));
              panel.cancelButton()->click();
            });
    QSignalSpy cancelled(&controller, &EngineController::jobCancelled);
    QSignalSpy finished(&controller, &EngineController::buildFinished);
    kiln::BuilderConfig config = panel.config();
    config.timingCachePath = dir.filePath("timing.cache").toStdString();
    controller.build(network, config, "fp32");
    QVERIFY(panel.cancelButton()->isEnabled());
    QVERIFY(cancelled.wait(kJobTimeoutMs));
    QCOMPARE(finished.count(), 0);
    QVERIFY2(shownWhileTuning.startsWith("tactics · conv"), qPrintable(shownWhileTuning));
    QVERIFY2(shownWhileTuning.contains(" · cpu.conv."), qPrintable(shownWhileTuning));
    QVERIFY(panel.phaseText().contains("cancelled"));
    QVERIFY(!panel.cancelButton()->isEnabled());
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList());
  }
};

QTEST_MAIN(BuildSettingsTest)
#include "build_settings_test.moc"
