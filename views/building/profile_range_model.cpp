#include "building/profile_range_model.h"

#include <QColor>
#include <QFont>
#include <QRegularExpression>

#include <algorithm>
#include <optional>
#include <utility>

namespace kiln::views {
namespace {

const QColor kErrorText(0xB9, 0x1C, 0x1C);
const QColor kErrorFill(0xFE, 0xE2, 0xE2);
const QColor kFixedText(0x6B, 0x72, 0x80);

int valueSlot(int column) { return column - ProfileRangeModel::kMin; }

// The image size a model's metadata states ("224", "384x384", "[3, 224, 224]": the last two
// numbers are height and width), or nothing.
std::optional<std::pair<int64_t, int64_t>> metadataImageSize(const std::map<std::string, std::string>& metadata) {
  static const QStringList kKeys = {"image_size", "input_size", "img_size", "imgsz", "resolution"};
  for (const auto& [key, value] : metadata) {
    if (!kKeys.contains(QString::fromStdString(key).toLower())) continue;
    std::vector<int64_t> numbers;
    for (const QString& part : QString::fromStdString(value).split(QRegularExpression("[^0-9]+"), Qt::SkipEmptyParts))
      numbers.push_back(part.toLongLong());
    if (numbers.empty() || numbers.back() < 1 || (numbers.size() > 1 && numbers[numbers.size() - 2] < 1)) continue;
    if (numbers.size() == 1) return std::pair{numbers[0], numbers[0]};
    return std::pair{numbers[numbers.size() - 2], numbers.back()};
  }
  return std::nullopt;
}

// The dims of a 4-D image input that are its height and width: NCHW's 2 and 3, or NHWC's 1 and 2
// for 3 channels last. Without a size in the metadata only 3-channel inputs count as images.
std::optional<std::pair<size_t, size_t>> imageSpatialDims(const Shape& shape, bool sizeStated) {
  if (shape.rank() != 4) return std::nullopt;
  auto isThree = [&](size_t d) { return shape[d].isKnown() && shape[d].value() == 3; };
  if (isThree(1) || (sizeStated && !isThree(3))) return std::pair<size_t, size_t>{2, 3};
  if (isThree(3) && !shape[1].isKnown()) return std::pair<size_t, size_t>{1, 2};
  return std::nullopt;
}

}  // namespace

void ProfileRangeModel::setNetwork(const Network* network) {
  beginResetModel();
  rows_.clear();
  if (network) {
    const auto statedSize = metadataImageSize(network->info().metadata);
    const std::pair<int64_t, int64_t> imageSize = statedSize.value_or(std::pair{kDefaultImageSize, kDefaultImageSize});
    for (const std::string& name : network->runtimeInputs()) {
      const Shape& shape = network->tensor(name).shape;
      if (!shape.hasRank()) continue;  // unknown rank: the builder names it when it matters
      const auto spatial = imageSpatialDims(shape, statedSize.has_value());
      for (size_t d = 0; d < shape.rank(); ++d) {
        Row row{name, d, shape.rank()};
        if (shape[d].isKnown()) {
          row.isStatic = true;
          std::fill(std::begin(row.values), std::end(row.values), shape[d].value());
        } else {
          row.symbol = QString::fromStdString(shape[d].toString());
          if (spatial && (d == spatial->first || d == spatial->second))
            std::fill(std::begin(row.values), std::end(row.values),
                      d == spatial->first ? imageSize.first : imageSize.second);
        }
        rows_.push_back(row);
      }
    }
  }
  endResetModel();
  emit validityChanged(isValid());
}

bool ProfileRangeModel::hasDynamicDimensions() const {
  return std::any_of(rows_.begin(), rows_.end(), [](const Row& row) { return !row.isStatic; });
}

QString ProfileRangeModel::rowError(const Row& row) const {
  const auto [min, opt, max] = row.values;
  if (min < 1) return tr("min %1 is below 1").arg(min);
  if (min > opt) return tr("min %1 > opt %2; needs min ≤ opt ≤ max").arg(min).arg(opt);
  if (opt > max) return tr("opt %1 > max %2; needs min ≤ opt ≤ max").arg(opt).arg(max);
  return {};
}

bool ProfileRangeModel::cellInvalid(const Row& row, int column) const {
  const auto [min, opt, max] = row.values;
  switch (column) {
    case kMin: return min < 1 || min > opt;
    case kOpt: return min > opt || opt > max;
    case kMax: return opt > max;
    default: return false;
  }
}

QStringList ProfileRangeModel::errors() const {
  QStringList lines;
  for (const Row& row : rows_) {
    const QString error = row.isStatic ? QString() : rowError(row);
    if (error.isEmpty()) continue;
    const QString dimension = row.symbol.isEmpty() ? QString::number(row.dimension)
                                                   : QStringLiteral("%1 (%2)").arg(row.dimension).arg(row.symbol);
    lines << tr("%1, dimension %2: %3").arg(QString::fromStdString(row.input), dimension, error);
  }
  return lines;
}

OptimizationProfile ProfileRangeModel::profile() const {
  OptimizationProfile profile;
  std::map<std::string, bool> dynamic;
  for (const Row& row : rows_) dynamic[row.input] = dynamic[row.input] || !row.isStatic;
  for (const Row& row : rows_) {
    if (!dynamic[row.input]) continue;
    ShapeRange& range = profile.inputs[row.input];
    range.min.push_back(row.values[0]);
    range.opt.push_back(row.values[1]);
    range.max.push_back(row.values[2]);
  }
  return profile;
}

void ProfileRangeModel::applyRanges(const std::map<std::string, ShapeRange>& ranges) {
  for (size_t r = 0; r < rows_.size(); ++r) {
    Row& row = rows_[r];
    const auto it = ranges.find(row.input);
    if (row.isStatic || it == ranges.end() || it->second.min.size() != row.rank || it->second.opt.size() != row.rank ||
        it->second.max.size() != row.rank)
      continue;
    row.values[0] = it->second.min[row.dimension];
    row.values[1] = it->second.opt[row.dimension];
    row.values[2] = it->second.max[row.dimension];
  }
  if (!rows_.empty()) emit dataChanged(index(0, kMin), index(int(rows_.size()) - 1, kMax));
  emit validityChanged(isValid());
}

int ProfileRangeModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

int ProfileRangeModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant ProfileRangeModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& row = rows_[size_t(index.row())];
  const int column = index.column();
  const bool isValue = column >= kMin;
  const bool invalid = !row.isStatic && cellInvalid(row, column);
  switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole:
      if (column == kInput) return QString::fromStdString(row.input);
      if (column == kDimension)
        return row.symbol.isEmpty() ? QString::number(row.dimension) : QStringLiteral("%1 · %2").arg(row.dimension).arg(row.symbol);
      return qlonglong(row.values[valueSlot(column)]);
    case Qt::ToolTipRole:
      if (invalid) return rowError(row);
      if (row.isStatic) return tr("Fixed at %1 by the model").arg(row.values[0]);
      return isValue ? tr("Double-click to edit; the engine accepts shapes from min to max and is tuned for opt")
                     : QVariant();
    case Qt::ForegroundRole:
      if (invalid) return kErrorText;
      if (row.isStatic && isValue) return kFixedText;
      return {};
    case Qt::BackgroundRole:
      return invalid ? QVariant(kErrorFill) : QVariant();
    case Qt::FontRole:
      if (invalid || (!row.isStatic && isValue)) {
        QFont font;
        font.setBold(true);
        return font;
      }
      return {};
    case Qt::TextAlignmentRole:
      return isValue ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
    default:
      return {};
  }
}

bool ProfileRangeModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid) || index.column() < kMin) return false;
  Row& row = rows_[size_t(index.row())];
  bool ok = false;
  const qlonglong number = value.toLongLong(&ok);
  if (row.isStatic || !ok) return false;
  const bool wasValid = isValid();
  row.values[valueSlot(index.column())] = number;
  // The neighbours' error state depends on this value too.
  emit dataChanged(this->index(index.row(), kMin), this->index(index.row(), kMax));
  if (wasValid != isValid() || !isValid()) emit validityChanged(isValid());
  return true;
}

Qt::ItemFlags ProfileRangeModel::flags(const QModelIndex& index) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return Qt::NoItemFlags;
  Qt::ItemFlags flags = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() >= kMin && !rows_[size_t(index.row())].isStatic) flags |= Qt::ItemIsEditable;
  return flags;
}

QVariant ProfileRangeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kInput: return tr("Input");
    case kDimension: return tr("Dim");
    case kMin: return tr("Min");
    case kOpt: return tr("Opt");
    case kMax: return tr("Max");
    default: return {};
  }
}

}  // namespace kiln::views
