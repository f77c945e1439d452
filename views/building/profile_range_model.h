#pragma once
// The optimization-profile editor's table: one row per dimension of every model input, with its
// min / opt / max. Static dimensions are fixed (not editable); dynamic ones are edited in place and
// checked as you type: min ≤ opt ≤ max, min ≥ 1. Invalid cells turn red and carry the message.
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <QAbstractTableModel>
#include <QStringList>

#include <map>
#include <string>
#include <vector>

namespace kiln::views {

class ProfileRangeModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kInput, kDimension, kMin, kOpt, kMax, kColumnCount };
  // Dynamic dimensions start at min 1, opt 1, max kDefaultMax (a batch of up to 8), except the
  // height and width of an image, which start fixed (editable) at the size the model's metadata
  // states (image_size, input_size, img_size, imgsz or resolution; then any 4-D input's dims 2 and
  // 3), else at kDefaultImageSize for a 3-channel NCHW or NHWC input: never at 1x1.
  static constexpr int64_t kDefaultMax = 8;
  static constexpr int64_t kDefaultImageSize = 224;

  using QAbstractTableModel::QAbstractTableModel;

  void setNetwork(const Network* network);  // nullptr clears
  bool hasDynamicDimensions() const;
  bool isValid() const { return errors().isEmpty(); }
  // One line per invalid dimension: "image, dimension 0 (N): min 4 > opt 2; needs min ≤ opt ≤ max".
  QStringList errors() const;

  // The profile for the dynamic inputs (static ones need none).
  OptimizationProfile profile() const;
  // Restores earlier ranges for inputs whose name and rank match; others keep their defaults.
  void applyRanges(const std::map<std::string, ShapeRange>& ranges);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void validityChanged(bool valid);

 private:
  struct Row {
    std::string input;
    size_t dimension = 0;
    size_t rank = 0;
    QString symbol;  // "N" for a named dynamic dimension
    bool isStatic = false;
    int64_t values[3] = {1, 1, kDefaultMax};  // min, opt, max
  };
  QString rowError(const Row& row) const;
  bool cellInvalid(const Row& row, int column) const;

  std::vector<Row> rows_;
};

}  // namespace kiln::views
