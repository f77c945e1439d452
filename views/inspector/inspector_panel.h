#pragma once
// The inspector dock: for a selected layer its attributes, inputs/outputs (dtype, shape) and weight
// statistics with a histogram; for a collapsed group its summary; otherwise the model's properties.
#include "graph/graph_structure.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QSplitter;
class QStackedWidget;
class QTableView;

namespace kiln::views {

class AttributeTableModel;
class ModelPropertiesModel;
class TensorTableModel;
class WeightHistogram;

class InspectorPanel : public QWidget {
  Q_OBJECT
 public:
  explicit InspectorPanel(QWidget* parent = nullptr);

  // `structure` must outlive what is shown (call again, or clear(), when it changes).
  void showModel(const GraphStructure* structure);
  void showNode(const GraphStructure* structure, int node);
  void showGroup(const GraphStructure* structure, int group);
  void clear();

  QString title() const;
  const AttributeTableModel* attributeModel() const { return attributes_; }
  const TensorTableModel* tensorModel() const { return tensors_; }
  const ModelPropertiesModel* modelProperties() const { return properties_; }
  const WeightHistogram* histogram() const { return histogram_; }

 private:
  void showWeight(int comboIndex);
  void setTitle(const QString& heading, const QString& detail, const QColor& accent);
  void fitNodePage();

  const GraphStructure* structure_ = nullptr;
  int node_ = -1;
  QLabel* title_;
  QStackedWidget* pages_;
  QSplitter* nodePage_;
  QWidget* modelPage_;
  AttributeTableModel* attributes_;
  TensorTableModel* tensors_;
  ModelPropertiesModel* properties_;
  TensorTableModel* interface_;
  QTableView* attributeView_;
  QTableView* tensorView_;
  QLabel* weightHeading_;
  QComboBox* weightChoice_;
  WeightHistogram* histogram_;
};

}  // namespace kiln::views
