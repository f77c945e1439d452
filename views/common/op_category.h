#pragma once
// Op categories colour the graph's nodes (Netron-style) and group ops in summaries.
#include <QColor>
#include <QString>

#include <string_view>

namespace kiln::views {

enum class OpCategory {
  kConvolution,
  kMatMul,
  kActivation,
  kNormalization,
  kPooling,
  kElementwise,
  kShape,
  kReduction,
  kControlFlow,
  kQuantization,
  kOther,
};
constexpr int kOpCategoryCount = int(OpCategory::kOther) + 1;

OpCategory opCategory(std::string_view opType);
QString categoryName(OpCategory category);  // "Convolution", "Shape / layout", ...
QColor categoryColor(OpCategory category);

}  // namespace kiln::views
