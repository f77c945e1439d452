#include "elementwise_ops.h"

#include <cstring>

namespace kiln {
namespace {

using kernels::BinaryOp;
using kernels::UnaryOp;
using kernels::UnaryParams;

UnaryParams alphaParam(const Layer& layer, float alphaDefault) { return {layer.attrFloat("alpha", alphaDefault)}; }

struct ParameterisedOp {
  const char* name;
  UnaryOp op;
  UnaryParams (*params)(const Layer&);
};

const ParameterisedOp kParameterisedOps[] = {
    {"LeakyRelu", UnaryOp::kLeakyRelu, [](const Layer& l) { return alphaParam(l, 0.01f); }},
    {"Elu", UnaryOp::kElu, [](const Layer& l) { return alphaParam(l, 1.0f); }},
    {"Celu", UnaryOp::kCelu, [](const Layer& l) { return alphaParam(l, 1.0f); }},
    {"ThresholdedRelu", UnaryOp::kThresholdedRelu, [](const Layer& l) { return alphaParam(l, 1.0f); }},
    {"Selu", UnaryOp::kSelu,
     [](const Layer& l) {
       return UnaryParams{l.attrFloat("alpha", 1.67326319217681884765625f), 0.0f,
                          l.attrFloat("gamma", 1.05070102214813232421875f)};
     }},
    {"HardSigmoid", UnaryOp::kHardSigmoid,
     [](const Layer& l) { return UnaryParams{l.attrFloat("alpha", 0.2f), l.attrFloat("beta", 0.5f)}; }},
    {"Shrink", UnaryOp::kShrink,
     [](const Layer& l) { return UnaryParams{l.attrFloat("lambd", 0.5f), l.attrFloat("bias", 0.0f)}; }},
};

const std::pair<const char*, UnaryOp> kPlainOps[] = {
    {"Neg", UnaryOp::kNeg},       {"Abs", UnaryOp::kAbs},         {"Sign", UnaryOp::kSign},
    {"Relu", UnaryOp::kRelu},     {"Sqrt", UnaryOp::kSqrt},       {"Reciprocal", UnaryOp::kReciprocal},
    {"Exp", UnaryOp::kExp},       {"Log", UnaryOp::kLog},         {"Sin", UnaryOp::kSin},
    {"Cos", UnaryOp::kCos},       {"Tan", UnaryOp::kTan},         {"Asin", UnaryOp::kAsin},
    {"Acos", UnaryOp::kAcos},     {"Atan", UnaryOp::kAtan},       {"Sinh", UnaryOp::kSinh},
    {"Cosh", UnaryOp::kCosh},     {"Tanh", UnaryOp::kTanh},       {"Asinh", UnaryOp::kAsinh},
    {"Acosh", UnaryOp::kAcosh},   {"Atanh", UnaryOp::kAtanh},     {"Erf", UnaryOp::kErf},
    {"Floor", UnaryOp::kFloor},   {"Ceil", UnaryOp::kCeil},       {"Round", UnaryOp::kRound},
    {"Sigmoid", UnaryOp::kSigmoid}, {"Softplus", UnaryOp::kSoftplus}, {"Softsign", UnaryOp::kSoftsign},
    {"HardSwish", UnaryOp::kHardSwish}, {"BitwiseNot", UnaryOp::kBitwiseNot},
};

const std::pair<const char*, BinaryOp> kBinaryOps[] = {
    {"Add", BinaryOp::kAdd},       {"Sub", BinaryOp::kSub},           {"Mul", BinaryOp::kMul},
    {"Div", BinaryOp::kDiv},       {"PRelu", BinaryOp::kPRelu},       {"BitwiseAnd", BinaryOp::kBitwiseAnd},
    {"BitwiseOr", BinaryOp::kBitwiseOr}, {"BitwiseXor", BinaryOp::kBitwiseXor}, {"Equal", BinaryOp::kEqual},
    {"Less", BinaryOp::kLess},     {"LessOrEqual", BinaryOp::kLessOrEqual}, {"Greater", BinaryOp::kGreater},
    {"GreaterOrEqual", BinaryOp::kGreaterOrEqual}, {"And", BinaryOp::kAnd}, {"Or", BinaryOp::kOr},
    {"Xor", BinaryOp::kXor}};

}  // namespace

std::optional<UnaryChoice> unaryOpOf(const Layer& layer) {
  if (!layer.domain.empty()) return std::nullopt;
  for (auto [name, op] : kPlainOps)
    if (layer.opType == name) return UnaryChoice{op, {}};
  for (const auto& entry : kParameterisedOps)
    if (layer.opType == entry.name) return UnaryChoice{entry.op, entry.params(layer)};
  if (layer.opType == "Gelu")
    return UnaryChoice{layer.attrString("approximate", "none") == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu, {}};
  return std::nullopt;
}

std::optional<BinaryOp> binaryOpOf(const Layer& layer) {
  if (!layer.domain.empty()) return std::nullopt;
  for (auto [name, op] : kBinaryOps)
    if (layer.opType == name) return op;
  if (layer.opType == "Mod") return layer.attrInt("fmod", 0) ? BinaryOp::kFMod : BinaryOp::kMod;
  if (layer.opType == "BitShift")
    return layer.attrString("direction") == "LEFT" ? BinaryOp::kBitShiftLeft : BinaryOp::kBitShiftRight;
  return std::nullopt;
}

}  // namespace kiln
