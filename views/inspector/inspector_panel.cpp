#include "inspector/inspector_panel.h"

#include "common/attribute_table_model.h"
#include "common/model_properties_model.h"
#include "common/op_category.h"
#include "common/tensor_table_model.h"
#include "common/value_format.h"
#include "inspector/weight_histogram.h"

#include <algorithm>

#include <QComboBox>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QVBoxLayout>

namespace kiln::views {
namespace {

constexpr int kMaxFittedRows = 12;  // taller tables scroll
constexpr int kMinHistogramHeight = 120;

QTableView* makeTable(QAbstractItemModel* model, QWidget* parent) {
  auto* view = new QTableView(parent);
  view->setModel(model);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view->setAlternatingRowColors(true);
  view->setWordWrap(false);
  view->verticalHeader()->hide();
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
  view->horizontalHeader()->setStretchLastSection(true);
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->horizontalHeader()->setHighlightSections(false);
  return view;
}

QWidget* section(const QString& heading, QWidget* content, QWidget* parent, QLabel** headingLabel = nullptr) {
  auto* box = new QWidget(parent);
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 4, 0, 0);
  layout->setSpacing(3);
  auto* label = new QLabel(QStringLiteral("<b>%1</b>").arg(heading.toHtmlEscaped()), box);
  layout->addWidget(label);
  layout->addWidget(content, 1);
  if (headingLabel) *headingLabel = label;
  return box;
}

}  // namespace

InspectorPanel::InspectorPanel(QWidget* parent) : QWidget(parent) {
  attributes_ = new AttributeTableModel(this);
  tensors_ = new TensorTableModel(this);
  properties_ = new ModelPropertiesModel(this);
  interface_ = new TensorTableModel(this);

  title_ = new QLabel(this);
  title_->setTextFormat(Qt::RichText);
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  nodePage_ = new QSplitter(Qt::Vertical, this);
  nodePage_->setChildrenCollapsible(false);
  attributeView_ = makeTable(attributes_, nodePage_);
  tensorView_ = makeTable(tensors_, nodePage_);
  nodePage_->addWidget(section(tr("Attributes"), attributeView_, nodePage_));
  nodePage_->addWidget(section(tr("Inputs and outputs"), tensorView_, nodePage_));
  auto* weights = new QWidget(nodePage_);
  auto* weightLayout = new QVBoxLayout(weights);
  weightLayout->setContentsMargins(0, 0, 0, 0);
  weightChoice_ = new QComboBox(weights);
  histogram_ = new WeightHistogram(weights);
  weightLayout->addWidget(weightChoice_);
  weightLayout->addWidget(histogram_, 1);
  nodePage_->addWidget(section(tr("Weights"), weights, nodePage_, &weightHeading_));
  nodePage_->setStretchFactor(2, 1);  // when the dock resizes, the histogram grows or shrinks, not the tables
  connect(weightChoice_, &QComboBox::currentIndexChanged, this, &InspectorPanel::showWeight);

  auto* modelSplitter = new QSplitter(Qt::Vertical, this);
  modelSplitter->addWidget(section(tr("Model"), makeTable(properties_, modelSplitter), modelSplitter));
  modelSplitter->addWidget(section(tr("Graph inputs and outputs"), makeTable(interface_, modelSplitter), modelSplitter));
  modelPage_ = modelSplitter;

  pages_ = new QStackedWidget(this);
  pages_->addWidget(nodePage_);
  pages_->addWidget(modelPage_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(title_);
  layout->addWidget(pages_, 1);
  clear();
}

QString InspectorPanel::title() const { return title_->text(); }

void InspectorPanel::setTitle(const QString& heading, const QString& detail, const QColor& accent) {
  title_->setText(QStringLiteral("<span style='font-size:large; font-weight:600; color:%1'>■</span> "
                                 "<span style='font-size:large; font-weight:600'>%2</span><br>"
                                 "<span style='color:#6b7280'>%3</span>")
                      .arg(accent.name(), heading.toHtmlEscaped(), detail.toHtmlEscaped()));
}

void InspectorPanel::clear() {
  structure_ = nullptr;
  node_ = -1;
  attributes_->setLayer(nullptr);
  tensors_->setLayer(nullptr, nullptr);
  properties_->setNetwork(nullptr);
  interface_->setGraphInterface(nullptr);
  weightChoice_->clear();
  histogram_->setTensor(nullptr);
  title_->setText(tr("<span style='color:#6b7280'>No model open</span>"));
  pages_->setCurrentWidget(modelPage_);
}

void InspectorPanel::showModel(const GraphStructure* structure) {
  clear();
  structure_ = structure;
  const Network* network = structure ? structure->network().get() : nullptr;
  if (!network) return;
  properties_->setNetwork(network);
  interface_->setGraphInterface(network);
  const ModelInfo& info = network->info();
  setTitle(info.graphName.empty() ? tr("Model") : QString::fromStdString(info.graphName),
           tr("%1 layers · %2 parameters").arg(network->layers().size()).arg(formatCount(network->parameterCount())),
           QColor(0x37, 0x41, 0x51));
}

void InspectorPanel::showNode(const GraphStructure* structure, int node) {
  if (!structure || node < 0 || size_t(node) >= structure->nodes().size()) return showModel(structure);
  structure_ = structure;
  node_ = node;
  const GraphNode& graphNode = structure->nodes()[size_t(node)];
  pages_->setCurrentWidget(nodePage_);
  weightChoice_->blockSignals(true);
  weightChoice_->clear();
  if (!graphNode.layer) {  // a graph input or output
    attributes_->setLayer(nullptr);
    tensors_->setLayer(nullptr, nullptr);
    const Tensor* tensor = graphNode.network->findTensor(graphNode.name);
    setTitle(QString::fromStdString(graphNode.name),
             (graphNode.kind == NodeKind::kInput ? tr("graph input") : tr("graph output")) + QStringLiteral(" · ") +
                 (tensor ? formatTensorType(*tensor) : QStringLiteral("?")),
             QColor(0x37, 0x41, 0x51));
  } else {
    const Layer& layer = *graphNode.layer;
    attributes_->setLayer(&layer);
    tensors_->setLayer(graphNode.network, &layer);
    QString detail = QString::fromStdString(graphNode.name);
    if (layer.opsetVersion) detail += tr(" · opset %1").arg(layer.opsetVersion);
    if (!layer.domain.empty()) detail += QStringLiteral(" · ") + QString::fromStdString(layer.domain);
    const OpCategory category = opCategory(layer.opType);
    setTitle(QString::fromStdString(layer.opType), detail + QStringLiteral(" · ") + categoryName(category),
             categoryColor(category));
    for (size_t i = 0; i < layer.inputs.size(); ++i) {
      const Tensor* tensor = layer.inputs[i].empty() ? nullptr : graphNode.network->findTensor(layer.inputs[i]);
      if (tensor && tensor->isConstant())
        weightChoice_->addItem(inputRoleName(layer, i) + QStringLiteral(": ") + QString::fromStdString(tensor->name),
                               QString::fromStdString(tensor->name));
    }
    for (const auto& [name, attribute] : layer.attributes)
      if (attribute.get<HostTensor>()) weightChoice_->addItem(QString::fromStdString(name), QString());
  }
  weightChoice_->blockSignals(false);
  attributeView_->parentWidget()->setVisible(attributes_->rowCount() > 0);
  weightHeading_->parentWidget()->setVisible(weightChoice_->count() > 0);
  showWeight(weightChoice_->currentIndex());
  fitNodePage();
}

// The tables show all their rows (up to a dozen) and the histogram gets the rest, instead of three
// equal parts where short tables scroll and a clipped row hides the last attribute.
void InspectorPanel::fitNodePage() {
  const int heading = fontMetrics().height() + 8;  // a section's title and spacing
  auto tableHeight = [heading](const QTableView* view) {
    const int rows = std::min(view->model()->rowCount(), kMaxFittedRows);
    return heading + view->horizontalHeader()->sizeHint().height() + rows * view->verticalHeader()->defaultSectionSize() +
           2 * view->frameWidth() + 2;
  };
  const int attributes = attributes_->rowCount() > 0 ? tableHeight(attributeView_) : 0;
  const int tensors = tableHeight(tensorView_);
  const int rest = std::max(kMinHistogramHeight, nodePage_->height() - attributes - tensors);
  nodePage_->setSizes({attributes, tensors, rest});
}

void InspectorPanel::showGroup(const GraphStructure* structure, int group) {
  if (!structure || group < 0 || size_t(group) >= structure->groups().size()) return showModel(structure);
  showModel(structure);
  const GraphGroup& g = structure->groups()[size_t(group)];
  setTitle(QString::fromStdString(g.title),
           tr("%1 · %n layer(s) · double-click to expand", nullptr, g.nodeCount).arg(QString::fromStdString(g.path)),
           g.kind == GroupKind::kSubgraph ? categoryColor(OpCategory::kControlFlow) : QColor(0x4B, 0x55, 0x63));
}

void InspectorPanel::showWeight(int comboIndex) {
  const HostTensor* tensor = nullptr;
  if (structure_ && node_ >= 0 && comboIndex >= 0) {
    const GraphNode& graphNode = structure_->nodes()[size_t(node_)];
    const QString tensorName = weightChoice_->itemData(comboIndex).toString();
    if (!tensorName.isEmpty()) {
      const Tensor* t = graphNode.network->findTensor(tensorName.toStdString());
      if (t && t->isConstant()) tensor = &*t->constant;
    } else if (graphNode.layer) {  // a tensor attribute (Constant's value)
      auto it = graphNode.layer->attributes.find(weightChoice_->itemText(comboIndex).toStdString());
      if (it != graphNode.layer->attributes.end()) tensor = it->second.get<HostTensor>();
    }
  }
  histogram_->setTensor(tensor);
}

}  // namespace kiln::views
