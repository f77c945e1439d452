// The engine-side item models under QAbstractItemModelTester, the profile editor's validation, the
// Build panel in a narrow dock, the timings table filled from a kiln-profile-1 file, and the .npy
// reader.
#include <accuracy/tensor_metrics_model.h>
#include <building/build_panel.h>
#include <building/profile_range_model.h>
#include <common/npy_file.h>
#include <fusion/engine_layer_model.h>
#include <fusion/pass_model.h>
#include <timing/layer_timing_model.h>
#include <timing/timing_panel.h>

#include <kiln/error.h>
#include <kiln/onnx_importer.h>

#include <QCheckBox>
#include <QAbstractItemModelTester>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>

using namespace kiln::views;

namespace {

QString cell(const QAbstractItemModel& model, int row, int column) { return model.data(model.index(row, column)).toString(); }

int rowOf(const ProfileRangeModel& model, const QString& input, int dimension) {
  for (int row = 0; row < model.rowCount(); ++row)
    if (cell(model, row, ProfileRangeModel::kInput) == input &&
        cell(model, row, ProfileRangeModel::kDimension).startsWith(QString::number(dimension)))
      return row;
  return -1;
}

kiln::ProfileReport threeLayerProfile() {
  kiln::ProfileReport report;
  report.plan.backend = "cpu";
  report.plan.deviceName = "CPU (test)";
  report.inputShapes = "image:1x3x64x64";
  report.iterations = 20;
  report.totalMedianMs = 4.0;
  report.layers = {{"stem/Conv", "kiln.FusedConv", "cpu.conv.im2col_gemm", "fp16", 1.0, 1.1, 0.9, 25.0},
                   {"layer1.0.0/Conv", "kiln.FusedConv", "cpu.conv.im2col_gemm", "fp16", 2.0, 2.2, 1.9, 50.0},
                   {"head/Softmax", "Softmax", "cpu.softmax", "fp32", 1.0, 1.0, 1.0, 25.0}};
  return report;
}

}  // namespace

class EngineModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void profileRangeModelFlagsInvalidRanges() {
    auto network = kiln::OnnxImporter().importFile(KILN_SAMPLE_MODEL);
    ProfileRangeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setNetwork(network.get());
    QCOMPARE(model.rowCount(), 4);  // image: N, 3, 64, 64
    QVERIFY(model.hasDynamicDimensions());
    QVERIFY(model.isValid());
    const int batch = rowOf(model, "image", 0);
    const int channels = rowOf(model, "image", 1);
    QVERIFY(model.flags(model.index(batch, ProfileRangeModel::kMin)) & Qt::ItemIsEditable);
    QVERIFY(!(model.flags(model.index(channels, ProfileRangeModel::kMin)) & Qt::ItemIsEditable));
    QVERIFY(!model.setData(model.index(channels, ProfileRangeModel::kMax), 4));  // fixed by the model

    QSignalSpy validity(&model, &ProfileRangeModel::validityChanged);
    QVERIFY(model.setData(model.index(batch, ProfileRangeModel::kMin), 4));  // min 4 > opt 1
    QVERIFY(!model.isValid());
    QCOMPARE(validity.last().first().toBool(), false);
    QCOMPARE(model.errors().size(), 1);
    QVERIFY(model.errors().front().contains("min 4 > opt 1"));
    QVERIFY(model.data(model.index(batch, ProfileRangeModel::kMin), Qt::BackgroundRole).isValid());
    QVERIFY(model.data(model.index(batch, ProfileRangeModel::kOpt), Qt::ToolTipRole).toString().contains("min ≤ opt ≤ max"));
    QVERIFY(!model.data(model.index(batch, ProfileRangeModel::kMax), Qt::BackgroundRole).isValid());

    QVERIFY(model.setData(model.index(batch, ProfileRangeModel::kOpt), 6));
    QVERIFY(model.isValid());
    QVERIFY(model.setData(model.index(batch, ProfileRangeModel::kMax), 5));  // opt 6 > max 5
    QVERIFY(model.errors().front().contains("opt 6 > max 5"));
    QVERIFY(model.setData(model.index(batch, ProfileRangeModel::kMax), 16));
    QVERIFY(model.setData(model.index(batch, ProfileRangeModel::kMin), 0));
    QVERIFY(model.errors().front().contains("below 1"));
    QVERIFY(model.setData(model.index(batch, ProfileRangeModel::kMin), 2));
    QVERIFY(model.isValid());
    const kiln::ShapeRange range = model.profile().inputs.at("image");
    QCOMPARE(range.min, (std::vector<int64_t>{2, 3, 64, 64}));
    QCOMPARE(range.opt, (std::vector<int64_t>{6, 3, 64, 64}));
    QCOMPARE(range.max, (std::vector<int64_t>{16, 3, 64, 64}));
  }

  void buildPanelDisablesBuildWhileInvalid() {
    auto network = kiln::OnnxImporter().importFile(KILN_SAMPLE_MODEL);
    BuildPanel panel;
    QVERIFY(!panel.buildButton()->isEnabled());  // no model yet
    panel.setNetwork(network.get());
    QVERIFY(panel.buildButton()->isEnabled());
    ProfileRangeModel* model = panel.profileModel();
    const int batch = rowOf(*model, "image", 0);
    model->setData(model->index(batch, ProfileRangeModel::kOpt), 9);  // opt 9 > max 8
    QVERIFY(!panel.buildButton()->isEnabled());
    QVERIFY(!panel.profileErrorLabel()->isHidden());
    QVERIFY(panel.profileErrorLabel()->text().contains("opt 9 > max 8"));
    QSignalSpy requested(&panel, &BuildPanel::buildRequested);
    panel.buildButton()->click();
    QCOMPARE(requested.count(), 0);
    model->setData(model->index(batch, ProfileRangeModel::kOpt), 4);
    QVERIFY(panel.buildButton()->isEnabled());
    QVERIFY(panel.profileErrorLabel()->isHidden());
    panel.buildButton()->click();
    QCOMPARE(requested.count(), 1);

    panel.setPrecisionAllowed(kiln::Precision::kFP16, true);
    // FP8 quantizes the model's convolutions (the CPU backend runs fp8 layers): it needs
    // calibration data or a cache before Build is offered.
    panel.setPrecisionAllowed(kiln::Precision::kFP8, true);
    QVERIFY(panel.config().allowFP8);
    QVERIFY(!panel.buildButton()->isEnabled());
    QVERIFY(panel.buildButton()->toolTip().contains("calibration"));
    panel.setPrecisionAllowed(kiln::Precision::kFP8, false);
    QVERIFY(panel.buildButton()->isEnabled());
    const kiln::BuilderConfig config = panel.config();
    QVERIFY(config.allowFP16 && !config.allowFP8 && !config.allowINT8);
    QCOMPARE(config.backend, kiln::BackendKind::kCpu);
    QCOMPARE(config.profiles.size(), size_t(1));
    QCOMPARE(config.profiles[0].inputs.at("image").opt[0], int64_t(4));
    QCOMPARE(panel.precisionLabel(), QStringLiteral("fp16"));

    // INT8 without calibration data or a cache cannot build, and says why.
    panel.setPrecisionAllowed(kiln::Precision::kINT8, true);
    QVERIFY(!panel.buildButton()->isEnabled());
    QVERIFY(panel.buildButton()->toolTip().contains("INT8 and FP8 need calibration data"));
    QVERIFY(panel.profileErrorLabel()->isHidden());
    panel.setPrecisionAllowed(kiln::Precision::kINT8, false);
    QVERIFY(panel.buildButton()->isEnabled());
  }

  // The Build panel shares the left dock with Search at 270 px: its rows wrap and it scrolls
  // vertically, never sideways.
  void buildPanelFitsANarrowDock() {
    auto network = kiln::OnnxImporter().importFile(KILN_SAMPLE_MODEL);
    BuildPanel panel;
    panel.setNetwork(network.get());
    QVERIFY2(panel.minimumSizeHint().width() <= 270, qPrintable(QString::number(panel.minimumSizeHint().width())));
    panel.resize(270, 400);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto* scroll = panel.findChild<QScrollArea*>();
    QVERIFY(scroll);
    QTRY_VERIFY(scroll->verticalScrollBar()->maximum() > 0);  // 400 px is less than it needs
    QCOMPARE(scroll->horizontalScrollBar()->maximum(), 0);
    for (auto* box : panel.findChildren<QCheckBox*>()) {
      const QRect inViewport(box->mapTo(scroll->viewport(), QPoint(0, 0)), box->size());
      QVERIFY2(inViewport.right() < scroll->viewport()->width(), qPrintable(box->text()));
    }
  }

  void engineLayerModel() {
    EngineLayerModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    kiln::LayerSummary fused{"c1", "kiln.FusedConv", "fp16", "cpu.conv.im2col_gemm", {}, {}, {"c1", "bn1", "r1"}};
    kiln::LayerSummary plain{"pool", "MaxPool", "fp16", "cpu.maxpool", {}, {}, {"pool"}};
    model.setLayers({fused, plain});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(cell(model, 0, EngineLayerModel::kOrigins), QString::fromUtf8("3 × c1, bn1, r1"));
    QCOMPARE(cell(model, 1, EngineLayerModel::kOrigins), QStringLiteral("pool"));
    QCOMPARE(model.rowOfLayer("pool"), 1);
    QCOMPARE(model.rowOfLayer("missing"), -1);
    model.setLayers({});
    QCOMPARE(model.rowCount(), 0);
  }

  void passModelIsATree() {
    PassModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPasses({{"FoldBatchNorm", 10, 8, {"folded 'bn1' into 'c1'", "folded 'bn2' into 'c2'"}, 0.5},
                     {"RemoveNoOps", 8, 8, {}, 0.1}});
    QCOMPARE(model.rowCount(), 2);
    const QModelIndex fold = model.index(0, 0);
    QCOMPARE(model.rowCount(fold), 2);
    QCOMPARE(model.data(model.index(1, 0, fold)).toString(), QStringLiteral("folded 'bn2' into 'c2'"));
    QCOMPARE(model.parent(model.index(1, 0, fold)), fold);
    QCOMPARE(cell(model, 0, PassModel::kLayers), QString::fromUtf8("10 → 8"));
    QCOMPARE(cell(model, 0, PassModel::kChange), QString::fromUtf8("−2"));
    QCOMPARE(model.rowCount(model.index(1, 0)), 0);
  }

  void tensorMetricsModel() {
    TensorMetricsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    kiln::TensorMetrics good;
    good.name = "probabilities";
    good.elements = 10;
    good.maxAbsError = 1e-4;
    good.snrDb = 60;  // relative RMS error 1e-3
    kiln::TensorMetrics bad = good;
    bad.name = "logits";
    bad.pass = false;
    bad.failing = 3;
    model.setMetrics({good, bad});
    QCOMPARE(cell(model, 0, TensorMetricsModel::kResult), QStringLiteral("PASS"));
    QCOMPARE(cell(model, 1, TensorMetricsModel::kResult), QStringLiteral("FAIL"));
    QCOMPARE(cell(model, 0, TensorMetricsModel::kMaxAbs), QStringLiteral("1.00e-4"));
    QCOMPARE(cell(model, 0, TensorMetricsModel::kRelativeRms), QStringLiteral("1.00e-3"));
    QCOMPARE(cell(model, 0, TensorMetricsModel::kSnr), QStringLiteral("60.0"));
    QVERIFY(std::abs(relativeRmsError(good) - 1e-3) < 1e-12);
    QCOMPARE(model.data(model.index(1, TensorMetricsModel::kFailing), TensorMetricsModel::kSortRole).toLongLong(), 3);
  }

  void profileJsonFillsTheTimingsTable() {
    const kiln::ProfileReport loaded = kiln::ProfileReport::fromJson(threeLayerProfile().toJson());
    TimingPanel panel;
    QAbstractItemModelTester tester(panel.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester sortedTester(panel.sortedModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(!panel.table()->isVisibleTo(&panel));  // an empty table only takes room: hidden until a profile
    panel.setProfile(loaded, "test.json");
    QVERIFY(panel.table()->isVisibleTo(&panel));
    QCOMPARE(panel.model()->rowCount(), 3);
    const QAbstractItemModel* sorted = panel.table()->model();
    // Slowest first by default.
    QCOMPARE(cell(*sorted, 0, LayerTimingModel::kLayer), QStringLiteral("layer1.0.0/Conv"));
    QCOMPARE(cell(*sorted, 0, LayerTimingModel::kPercent), QStringLiteral("50.0 %"));
    QCOMPARE(cell(*sorted, 0, LayerTimingModel::kMedian), QStringLiteral("2.0000"));
    panel.table()->sortByColumn(LayerTimingModel::kLayer, Qt::AscendingOrder);
    QCOMPARE(cell(*sorted, 0, LayerTimingModel::kLayer), QStringLiteral("head/Softmax"));
    QCOMPARE(cell(*sorted, 0, LayerTimingModel::kPercent), QStringLiteral("25.0 %"));
    double total = 0;
    for (int row = 0; row < sorted->rowCount(); ++row)
      total += sorted->data(sorted->index(row, LayerTimingModel::kPercent), LayerTimingModel::kSortRole).toDouble();
    QCOMPARE(total, 100.0);
    const auto values = panel.layerValues();
    QCOMPARE(values.size(), size_t(3));
    QCOMPARE(values[1].label, QStringLiteral("50%"));
    QVERIFY(panel.heatmapBox()->isEnabled());
    QVERIFY_THROWS_EXCEPTION(kiln::Error, kiln::ProfileReport::fromJson("{\"format\": \"other\"}"));
    panel.clear();
    QVERIFY(!panel.table()->isVisibleTo(&panel));
  }

  void readsNpyFiles() {
    QTemporaryDir dir;
    const QString path = dir.filePath("image.npy");
    const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    const size_t aligned = (10 + header.size() + 1 + 63) / 64 * 64;  // the format pads the header to 64 bytes
    const std::string padded = header + std::string(aligned - 10 - header.size() - 1, ' ') + "\n";
    QByteArray bytes("\x93NUMPY\x01\x00", 8);
    bytes.append(char(padded.size() & 0xFF)).append(char(padded.size() >> 8)).append(padded.data(), qsizetype(padded.size()));
    const float values[6] = {1.5f, -2.0f, 0.25f, 3.0f, 4.0f, -0.5f};
    bytes.append(reinterpret_cast<const char*>(values), sizeof(values));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(bytes);
    file.close();
    const kiln::HostTensor tensor = readNpyFile(path.toStdString());
    QCOMPARE(tensor.dims(), (std::vector<int64_t>{2, 3}));
    QCOMPARE(tensor.data<float>()[1], -2.0f);
    QCOMPARE(tensor.data<float>()[5], -0.5f);

    QFile truncated(dir.filePath("short.npy"));
    QVERIFY(truncated.open(QIODevice::WriteOnly));
    truncated.write(bytes.left(bytes.size() - 8));
    truncated.close();
    QVERIFY_THROWS_EXCEPTION(kiln::Error, readNpyFile(dir.filePath("short.npy").toStdString()));
    QVERIFY_THROWS_EXCEPTION(kiln::Error, readNpyFile(dir.filePath("missing.npy").toStdString()));
  }
};

QTEST_MAIN(EngineModelsTest)
#include "engine_models_test.moc"
