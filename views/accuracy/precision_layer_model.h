#pragma once
// The layers the precision tools looked at: for the bisect, each candidate and whether it must be
// held back; for the advisor, each layer's error when only it is reduced, the time reducing it
// saves, Pareto membership and the suggestion, worst error first.
#include <kiln/precision_bisect.h>
#include <kiln/quantization_advisor.h>

#include <QAbstractTableModel>

#include <cmath>
#include <limits>

namespace kiln::views {

class PrecisionLayerModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kLayer, kType, kError, kSavedMs, kKeep, kColumnCount };
  struct Row {
    std::string name, type;
    double error = std::numeric_limits<double>::quiet_NaN();    // advisor: the error with only it reduced
    double savedMs = std::numeric_limits<double>::quiet_NaN();  // advisor
    bool pareto = false;
    bool keep = false;
  };
  using QAbstractTableModel::QAbstractTableModel;

  void setBisect(const PrecisionBisectResult& result);
  void setAdvice(const QuantizationAdvice& advice);
  void clear();
  const std::vector<Row>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  void setRows(std::vector<Row> rows);
  std::vector<Row> rows_;
  QString keepLabel_;  // "fp32"
};

}  // namespace kiln::views
