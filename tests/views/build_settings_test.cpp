// The Build panel's tactic settings and its view of a running build: optimisation level, tactic
// sources and CUDA graphs into the BuilderConfig (and QSettings); image inputs with dynamic height
// and width start at a real image size, from the model's metadata or 224; the current layer and
// tactic shown while a background build tunes, and Cancel stopping it mid-tuning with no timing
// cache written. INT8: the calibration settings (data folder or file, calibrator, batches, cache,
// mean / std) reach the config and gate the Build button; FP8 is shown disabled with the CPU
// backend's reason; an INT8 build calibrates from a folder of images in the background, showing
// the images and batches, and Cancel during calibration writes no calibration cache.
#include "engine_controller.h"

#include <building/build_panel.h>
#include <building/calibration_settings.h>
#include <building/profile_range_model.h>

#include <kiln/onnx_importer.h>

#include "common/test_models.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLineEdit>
#include <QRandomGenerator>
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

// One 3x3 Conv (random weights) over an image input: a layer INT8 and FP8 quantize.
std::shared_ptr<kiln::Network> convModel() {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, 3, 16, 16});
  mb.initializer("w", kiln::test::randomFloats({4, 3, 3, 3}, 5));
  mb.node("Conv", {"x", "w"}, {"y"}, "conv");
  mb.output("y");
  return kiln::OnnxImporter().importBytes(mb.bytes());
}

// (min, opt, max) of a row of the profile table.
std::array<qlonglong, 3> rangeOf(const ProfileRangeModel& model, int row) {
  auto value = [&](int column) { return model.data(model.index(row, column)).toLongLong(); };
  return {value(ProfileRangeModel::kMin), value(ProfileRangeModel::kOpt), value(ProfileRangeModel::kMax)};
}

using Range = std::array<qlonglong, 3>;

// `count` images of random pixels and assorted sizes (from `width` x `height` up) in `folder`, PNG
// and JPEG in turn.
void writeImages(const QString& folder, int count, int width = 48, int height = 40) {
  QRandomGenerator random(7);
  for (int k = 0; k < count; ++k) {
    QImage image(width + 8 * k, height + 5 * k, QImage::Format_RGB888);
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x)
        image.setPixel(x, y, qRgb(int(random.bounded(256)), (x * 5) % 256, (y * 7 + int(random.bounded(40))) % 256));
    const QString name = QStringLiteral("img%1.%2").arg(k, 2, 10, QLatin1Char('0')).arg(k % 2 ? "jpg" : "png");
    QVERIFY(image.save(QDir(folder).filePath(name)));
  }
}

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

  void fp8IsOfferedForConvolutionsAndNeedsCalibration() {
    auto network = convModel();
    BuildPanel panel;
    panel.setNetwork(network.get());
    QCheckBox* fp8 = panel.precisionBox(kiln::Precision::kFP8);
    QVERIFY2(fp8->isEnabled(), qPrintable(fp8->toolTip()));  // the CPU backend runs fp8 quantized layers
    QVERIFY(!panel.calibrationSettings()->isEnabled());
    fp8->setChecked(true);
    QVERIFY(panel.calibrationSettings()->isEnabled());
    QVERIFY(!panel.canBuild());  // no data, no cache
    QVERIFY(panel.config().allowFP8);
  }

  void int8CalibrationSettingsReachTheConfigAndGateTheBuild() {
    QTemporaryDir dir;
    writeImages(dir.path(), 3);
    auto network = reluModel({"N", "3", "H", "W"});
    {
      BuildPanel panel;
      panel.setNetwork(network.get());
      CalibrationSettings& calibration = *panel.calibrationSettings();
      QCheckBox* int8 = panel.precisionBox(kiln::Precision::kINT8);
      QCheckBox* fp8 = panel.precisionBox(kiln::Precision::kFP8);
      QVERIFY(int8->isEnabled());
      // FP8 quantizes Conv / MatMul / Gemm layers: this model has none, and the tip says so.
      QVERIFY(!fp8->isEnabled());
      QVERIFY2(fp8->toolTip().contains("no layer of this model in fp8"), qPrintable(fp8->toolTip()));
      QVERIFY(!calibration.isEnabled());  // only for INT8 builds
      QVERIFY(!panel.quantizeWhereFasterBox()->isEnabled());
      QVERIFY(!panel.config().allowINT8);

      int8->setChecked(true);
      QVERIFY(calibration.isEnabled());
      QVERIFY(!panel.canBuild());  // no data, no cache
      QVERIFY(panel.buildButton()->toolTip().contains("calibration data"));
      calibration.dataEdit()->setText(dir.filePath("missing"));
      QVERIFY(!panel.canBuild());
      QCOMPARE(calibration.dataSummary(), QStringLiteral("no such file or folder"));
      calibration.dataEdit()->setText(dir.path());
      QCOMPARE(calibration.dataSummary(), QStringLiteral("3 image(s) (PNG / JPEG)"));
      QVERIFY(calibration.meanEdit()->isVisibleTo(&calibration));
      QVERIFY(panel.canBuild());
      calibration.stdEdit()->setText("0.2, 0, 0.2");
      QVERIFY(!panel.canBuild());
      calibration.stdEdit()->setText("0.25, 0.25, 0.5");
      calibration.calibratorBox()->setCurrentIndex(2);  // percentile
      calibration.batchesBox()->setValue(2);
      calibration.cacheEdit()->setText(dir.filePath("calib.cache"));
      const kiln::BuilderConfig config = panel.config();
      QVERIFY(config.allowINT8);
      QCOMPARE(QString::fromStdString(config.calibration.dataPath), dir.path());
      QCOMPARE(config.calibration.calibrator, kiln::CalibratorKind::kPercentile);
      QCOMPARE(config.calibration.maxBatches, int64_t(2));
      QCOMPARE(QString::fromStdString(config.calibration.cachePath), dir.filePath("calib.cache"));
      QCOMPARE(config.calibration.imageStd, (std::vector<float>{0.25f, 0.25f, 0.5f}));
      QCOMPARE(config.calibration.imageMean, (std::vector<float>{0.485f, 0.456f, 0.406f}));
      QCOMPARE(panel.precisionLabel(), QStringLiteral("int8"));
      QVERIFY(!config.quantizeWhereFaster);
      QVERIFY(panel.quantizeWhereFasterBox()->isEnabled());
      panel.quantizeWhereFasterBox()->setChecked(true);
      QVERIFY(panel.config().quantizeWhereFaster);
      panel.setPrecisionAllowed(kiln::Precision::kFP16, true);
      QCOMPARE(panel.precisionLabel(), QStringLiteral("int8+fp16"));

      // A .npy folder hides the image normalisation.
      QTemporaryDir npy;
      QFile(npy.filePath("x.npy")).open(QIODevice::WriteOnly);
      calibration.dataEdit()->setText(npy.path());
      QCOMPARE(calibration.dataSummary(), QStringLiteral("1 .npy file(s)"));
      QVERIFY(!calibration.meanEdit()->isVisibleTo(&calibration));
      calibration.dataEdit()->setText(dir.path());
      panel.saveSettings();
    }
    BuildPanel again;
    again.setNetwork(network.get());
    QVERIFY(again.precisionBox(kiln::Precision::kINT8)->isChecked());
    QCOMPARE(again.config().calibration.calibrator, kiln::CalibratorKind::kPercentile);
    QCOMPARE(QString::fromStdString(again.config().calibration.dataPath), dir.path());
    QCOMPARE(again.config().calibration.imageStd, (std::vector<float>{0.25f, 0.25f, 0.5f}));
  }

  void int8BuildCalibratesFromImagesInTheBackgroundAndCancelsDuringCalibration() {
    // Enough large images that reading them takes a while: Cancel arrives while they are read.
    QTemporaryDir dir;
    writeImages(dir.path(), 40, 320, 240);
    auto network = kiln::OnnxImporter().importBytes(kiln::test::convReluStack(3, 3, 40).bytes());
    BuildPanel panel;
    panel.setNetwork(network.get());
    panel.precisionBox(kiln::Precision::kINT8)->setChecked(true);
    panel.calibrationSettings()->dataEdit()->setText(dir.path());
    panel.calibrationSettings()->cacheEdit()->setText(dir.filePath("calib.cache"));
    QVERIFY(panel.canBuild());
    EngineController controller;
    connect(&controller, &EngineController::jobStarted, &panel, &BuildPanel::buildStarted);
    connect(&controller, &EngineController::buildProgress, &panel, &BuildPanel::showProgress);
    connect(&controller, &EngineController::jobCancelled, &panel, &BuildPanel::buildCancelled);
    connect(&panel, &BuildPanel::cancelRequested, &controller, &EngineController::cancel);
    QStringList calibrationSteps;
    bool cancelAtImage = true;
    connect(&controller, &EngineController::buildProgress, this,
            [&](double, const QString& phase, const QString& layer, const QString&) {
              if (phase != "calibration" || layer.isEmpty()) return;
              calibrationSteps << panel.phaseText();
              if (cancelAtImage && layer.startsWith("image 1/")) panel.cancelButton()->click();
            });
    std::shared_ptr<const BuiltEngine> built;
    connect(&controller, &EngineController::buildFinished, this,
            [&](std::shared_ptr<const BuiltEngine> engine) { built = std::move(engine); });
    QSignalSpy cancelled(&controller, &EngineController::jobCancelled);
    QSignalSpy finished(&controller, &EngineController::buildFinished);
    controller.build(network, panel.config(), panel.precisionLabel());
    QVERIFY(cancelled.wait(kJobTimeoutMs));
    QCOMPARE(finished.count(), 0);
    QVERIFY2(calibrationSteps.value(0).startsWith("calibration · image 1/40: img00.png"),
             qPrintable(calibrationSteps.join('\n')));
    QVERIFY(panel.phaseText().contains("cancelled"));
    QVERIFY(!QFileInfo::exists(dir.filePath("calib.cache")));

    // Uncancelled, on the first four: the images read, the batches run, the cache written, three
    // int8 layers.
    cancelAtImage = false;
    calibrationSteps.clear();
    panel.calibrationSettings()->batchesBox()->setValue(4);
    controller.build(network, panel.config(), panel.precisionLabel());
    QVERIFY(finished.wait(kJobTimeoutMs));
    QVERIFY(built);
    QCOMPARE(built->precision, QStringLiteral("int8"));
    QCOMPARE(built->report.calibration.batches, int64_t(4));  // opt batch 1
    int int8Layers = 0;
    for (const auto& layer : built->report.layers) int8Layers += layer.precision == "int8";
    QCOMPARE(int8Layers, 3);
    QVERIFY(calibrationSteps.filter("calibration · batch").size() > 0);
    QVERIFY(QFileInfo::exists(dir.filePath("calib.cache")));
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
