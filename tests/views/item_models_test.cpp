// Every item model under QAbstractItemModelTester, plus the values they and the inspector show.
#include "sample_networks.h"

#include <common/test_models.h>

#include <common/attribute_table_model.h>
#include <common/model_properties_model.h>
#include <common/tensor_stats.h>
#include <common/tensor_table_model.h>
#include <common/value_format.h>
#include <graph/graph_export.h>
#include <graph/graph_scene.h>
#include <graph/search_result_model.h>
#include <inspector/inspector_panel.h>
#include <inspector/weight_histogram.h>

#include <kiln/error.h>

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <numeric>

using namespace kiln::views;

namespace {

const kiln::Layer& layerNamed(const kiln::Network& network, const std::string& name) {
  for (const auto& layer : network.layers())
    if (layer.name == name) return layer;
  throw std::runtime_error("no layer " + name);
}

QString cell(const QAbstractItemModel& model, int row, int column) {
  return model.data(model.index(row, column)).toString();
}

}  // namespace

class ItemModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void attributeModel() {
    auto network = kiln::test::sampleNetwork();
    AttributeTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    const auto& conv = layerNamed(*network, "/conv1/Conv");
    model.setLayer(&conv);
    QCOMPARE(model.rowCount(), int(conv.attributes.size()));
    // std::map order: dilations, kernel_shape, pads, strides.
    QCOMPARE(cell(model, 1, AttributeTableModel::kName), QStringLiteral("kernel_shape"));
    QCOMPARE(cell(model, 1, AttributeTableModel::kType), QStringLiteral("ints"));
    QCOMPARE(cell(model, 1, AttributeTableModel::kValue), QStringLiteral("7, 7"));
    model.setLayer(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

  void tensorModel() {
    auto network = kiln::test::sampleNetwork();
    TensorTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const auto& conv = layerNamed(*network, "/conv1/Conv");
    model.setLayer(network.get(), &conv);
    QCOMPARE(model.rowCount(), 4);  // X, W, B, Y
    QCOMPARE(cell(model, 1, TensorTableModel::kRole), QStringLiteral("W"));
    QCOMPARE(cell(model, 1, TensorTableModel::kShape), QString::fromUtf8("16×3×7×7"));
    QVERIFY(model.data(model.index(1, 0), TensorTableModel::kIsConstantRole).toBool());
    QCOMPARE(cell(model, 3, TensorTableModel::kDirection), QStringLiteral("out"));
    QCOMPARE(cell(model, 3, TensorTableModel::kShape), QString::fromUtf8("1×16×112×112"));
    QCOMPARE(cell(model, 3, TensorTableModel::kType), QStringLiteral("float32"));
    model.setGraphInterface(network.get());
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(cell(model, 0, TensorTableModel::kName), QStringLiteral("input"));
  }

  void modelProperties() {
    auto network = kiln::test::sampleNetwork();
    ModelPropertiesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setNetwork(network.get());
    QStringList keys, values;
    for (int row = 0; row < model.rowCount(); ++row) {
      keys << cell(model, row, ModelPropertiesModel::kProperty);
      values << cell(model, row, ModelPropertiesModel::kValue);
    }
    QVERIFY(keys.contains("Format") && keys.contains("Producer") && keys.contains("Opset"));
    QVERIFY(values.contains("ONNX IR version 8"));
    QVERIFY(values.contains("ai.onnx v17"));
    QVERIFY(values.contains(QString::fromUtf8("input: float32 ⟨1×3×224×224⟩")));
    QVERIFY(values.contains(formatCount(network->parameterCount()) + " (" + formatBytes(network->parameterBytes()) + ")"));
    model.setNetwork(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

  void searchResults() {
    GraphStructure structure(kiln::test::sampleNetwork());
    SearchResultModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStructure(&structure);
    model.search("relu");
    QVERIFY(model.rowCount() > 5);
    const int node = model.data(model.index(0, SearchResultModel::kName), SearchResultModel::kNodeRole).toInt();
    QCOMPARE(structure.nodes()[size_t(node)].layer->opType, std::string("Relu"));
    QCOMPARE(model.data(model.index(0, SearchResultModel::kOpType)).toString(), QStringLiteral("Relu"));
    // No text: every node, in graph order, named with its op type.
    model.search("");
    QCOMPARE(size_t(model.rowCount()), structure.nodes().size());
    for (int row = 0; row < model.rowCount(); ++row) {
      const int listed = model.data(model.index(row, SearchResultModel::kName), SearchResultModel::kNodeRole).toInt();
      QCOMPARE(listed, structure.search("")[size_t(row)]);
      const auto& graphNode = structure.nodes()[size_t(listed)];
      QCOMPARE(model.data(model.index(row, SearchResultModel::kName)).toString(), QString::fromStdString(graphNode.name));
      const QString opType = model.data(model.index(row, SearchResultModel::kOpType)).toString();
      QCOMPARE(opType, graphNode.layer ? QString::fromStdString(graphNode.layer->opType)
                       : graphNode.kind == kiln::views::NodeKind::kInput ? QStringLiteral("input") : QStringLiteral("output"));
    }
    model.search("no such node");
    QCOMPARE(model.rowCount(), 0);
  }

  void tensorStatsMatchNaiveLoop() {
    const auto tensor = kiln::test::randomFloats({8, 3, 5, 5}, 7, -2.0f, 3.0f);
    const float* values = tensor.data<float>();
    double sum = 0;
    for (int64_t i = 0; i < tensor.elementCount(); ++i) sum += values[i];
    const double mean = sum / double(tensor.elementCount());
    double squares = 0;
    for (int64_t i = 0; i < tensor.elementCount(); ++i) squares += (values[i] - mean) * (values[i] - mean);
    const TensorStats stats = computeTensorStats(tensor, 10);
    QCOMPARE(stats.count, tensor.elementCount());
    QCOMPARE(stats.min, double(*std::min_element(values, values + tensor.elementCount())));
    QCOMPARE(stats.max, double(*std::max_element(values, values + tensor.elementCount())));
    QVERIFY(std::abs(stats.mean - mean) < 1e-9);
    QVERIFY(std::abs(stats.stddev - std::sqrt(squares / double(tensor.elementCount()))) < 1e-6);
    QCOMPARE(std::accumulate(stats.histogram.begin(), stats.histogram.end(), int64_t(0)), tensor.elementCount());
    QVERIFY_THROWS_EXCEPTION(kiln::Error, computeTensorStats(kiln::HostTensor(kiln::DataType::kString, {2})));
  }

  void inspectorShowsLayerAndWeights() {
    GraphStructure structure(kiln::test::sampleNetwork());
    InspectorPanel panel;
    panel.showModel(&structure);
    QVERIFY(panel.modelProperties()->rowCount() > 5);
    const int conv = structure.search("/layer1/0/conv1/Conv").front();
    panel.showNode(&structure, conv);
    QVERIFY(panel.title().contains("Conv"));
    QCOMPARE(panel.attributeModel()->rowCount(), 4);
    QCOMPARE(panel.tensorModel()->rowCount(), 4);
    QVERIFY(panel.histogram()->statsText().contains("mean"));
    QVERIFY(panel.histogram()->statsText().contains(QString::fromUtf8("16×16×3×3")));
  }

  void exportsPngAndSvg() {
    GraphScene scene;
    QSignalSpy finished(&scene, &GraphScene::layoutFinished);
    scene.setNetwork(kiln::test::sampleNetwork());
    QVERIFY(finished.wait(60'000));
    QTemporaryDir dir;
    exportGraph(scene, dir.filePath("graph.png"));
    QImage image(dir.filePath("graph.png"));
    QVERIFY(!image.isNull() && image.width() > 200 && image.height() > 1000);
    exportGraph(scene, dir.filePath("graph.svg"));
    QFile svg(dir.filePath("graph.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    const QByteArray text = svg.readAll();
    QVERIFY(text.contains("<svg") && text.contains("BatchNormalization"));
    QVERIFY_THROWS_EXCEPTION(kiln::Error, exportGraph(scene, dir.filePath("graph.bmp")));
  }
};

QTEST_MAIN(ItemModelsTest)
#include "item_models_test.moc"
