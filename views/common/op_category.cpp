#include "common/op_category.h"

#include <string>
#include <unordered_map>

namespace kiln::views {
namespace {

const std::unordered_map<std::string_view, OpCategory>& categoryTable() {
  using C = OpCategory;
  static const std::unordered_map<std::string_view, OpCategory> table = [] {
    std::unordered_map<std::string_view, OpCategory> t;
    auto add = [&t](C category, std::initializer_list<std::string_view> ops) {
      for (auto op : ops) t.emplace(op, category);
    };
    add(C::kConvolution, {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "DeformConv", "Col2Im"});
    add(C::kMatMul, {"MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Einsum", "Attention",
                     "MultiHeadAttention", "FusedMatMul"});
    add(C::kActivation,
        {"Relu", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "Tanh", "Elu", "Selu", "Celu", "Gelu",
         "FastGelu", "Softplus", "Softsign", "HardSwish", "Mish", "ThresholdedRelu", "Softmax", "LogSoftmax",
         "Hardmax", "Clip", "Shrink", "Swish", "BiasGelu", "QuickGelu"});
    add(C::kNormalization,
        {"BatchNormalization", "InstanceNormalization", "LayerNormalization", "GroupNormalization", "LpNormalization",
         "LRN", "MeanVarianceNormalization", "RMSNormalization", "SkipLayerNormalization",
         "SimplifiedLayerNormalization", "Dropout"});
    add(C::kPooling, {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool",
                      "MaxRoiPool", "RoiAlign", "MaxUnpool"});
    add(C::kElementwise,
        {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Abs", "Neg", "Reciprocal", "Floor", "Ceil",
         "Round", "Sign", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
         "Atanh", "Min", "Max", "Mean", "Sum", "Mod", "BitShift", "And", "Or", "Xor", "Not", "Equal", "Less",
         "LessOrEqual", "Greater", "GreaterOrEqual", "Where", "IsNaN", "IsInf", "BitwiseAnd", "BitwiseOr",
         "BitwiseXor", "BitwiseNot", "Cast", "CastLike"});
    add(C::kShape,
        {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Slice", "Gather",
         "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "Expand", "Tile", "Pad", "Shape",
         "Size", "Identity", "Constant", "ConstantOfShape", "Range", "DepthToSpace", "SpaceToDepth", "Resize",
         "Upsample", "OneHot", "NonZero", "Compress", "ReverseSequence", "Trilu", "EyeLike", "CenterCropPad",
         "GridSample", "SplitToSequence", "ConcatFromSequence", "SequenceAt", "SequenceConstruct",
         "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength"});
    add(C::kReduction,
        {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
         "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "TopK", "CumSum", "NonMaxSuppression"});
    add(C::kControlFlow, {"If", "Loop", "Scan", "Optional", "OptionalGetElement", "OptionalHasElement"});
    add(C::kQuantization, {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearAdd",
                           "QLinearMul", "QLinearSigmoid", "QLinearAveragePool", "QLinearGlobalAveragePool"});
    return t;
  }();
  return table;
}

}  // namespace

OpCategory opCategory(std::string_view opType) {
  const auto& table = categoryTable();
  auto it = table.find(opType);
  return it == table.end() ? OpCategory::kOther : it->second;
}

QString categoryName(OpCategory category) {
  switch (category) {
    case OpCategory::kConvolution: return QStringLiteral("Convolution");
    case OpCategory::kMatMul: return QStringLiteral("MatMul / Gemm");
    case OpCategory::kActivation: return QStringLiteral("Activation");
    case OpCategory::kNormalization: return QStringLiteral("Normalization");
    case OpCategory::kPooling: return QStringLiteral("Pooling");
    case OpCategory::kElementwise: return QStringLiteral("Elementwise");
    case OpCategory::kShape: return QStringLiteral("Shape / layout");
    case OpCategory::kReduction: return QStringLiteral("Reduction");
    case OpCategory::kControlFlow: return QStringLiteral("Control flow");
    case OpCategory::kQuantization: return QStringLiteral("Quantization");
    case OpCategory::kOther: break;
  }
  return QStringLiteral("Other");
}

QColor categoryColor(OpCategory category) {
  // Muted, mutually distinct hues that keep white header text readable.
  switch (category) {
    case OpCategory::kConvolution: return QColor(0x33, 0x5E, 0x9E);
    case OpCategory::kMatMul: return QColor(0x5E, 0x4A, 0xA0);
    case OpCategory::kActivation: return QColor(0xA8, 0x3E, 0x3B);
    case OpCategory::kNormalization: return QColor(0x24, 0x7E, 0x84);
    case OpCategory::kPooling: return QColor(0x3C, 0x7A, 0x3A);
    case OpCategory::kElementwise: return QColor(0x5B, 0x6B, 0x80);
    case OpCategory::kShape: return QColor(0x7D, 0x5E, 0x4C);
    case OpCategory::kReduction: return QColor(0xA8, 0x74, 0x1A);
    case OpCategory::kControlFlow: return QColor(0x8A, 0x3A, 0x78);
    case OpCategory::kQuantization: return QColor(0xC0, 0x58, 0x1C);
    case OpCategory::kOther: break;
  }
  return QColor(0x70, 0x76, 0x80);
}

}  // namespace kiln::views
