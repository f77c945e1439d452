#include "activations.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

namespace kiln::kernels {

namespace {

std::optional<RecurrentActivationKind> parseRecurrentActivation(const std::string& name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  using K = RecurrentActivationKind;
  static const std::pair<const char*, K> kNames[] = {
      {"sigmoid", K::kSigmoid},         {"tanh", K::kTanh},           {"relu", K::kRelu},
      {"affine", K::kAffine},           {"leakyrelu", K::kLeakyRelu}, {"thresholdedrelu", K::kThresholdedRelu},
      {"scaledtanh", K::kScaledTanh},   {"hardsigmoid", K::kHardSigmoid}, {"elu", K::kElu},
      {"softsign", K::kSoftsign},       {"softplus", K::kSoftplus},
  };
  for (const auto& [n, kind] : kNames)
    if (lower == n) return kind;
  return std::nullopt;
}

int alphaCount(RecurrentActivationKind kind) {
  using K = RecurrentActivationKind;
  switch (kind) {
    case K::kAffine: case K::kLeakyRelu: case K::kThresholdedRelu: case K::kScaledTanh: case K::kHardSigmoid:
    case K::kElu: return 1;
    default: return 0;
  }
}

int betaCount(RecurrentActivationKind kind) {
  using K = RecurrentActivationKind;
  return kind == K::kAffine || kind == K::kScaledTanh || kind == K::kHardSigmoid ? 1 : 0;
}

RecurrentActivation withDefaults(RecurrentActivationKind kind) {
  using K = RecurrentActivationKind;
  switch (kind) {
    case K::kAffine: return {kind, 1.0f, 0.0f};
    case K::kLeakyRelu: return {kind, 0.01f, 0.0f};
    case K::kThresholdedRelu: return {kind, 1.0f, 0.0f};
    case K::kScaledTanh: return {kind, 1.0f, 1.0f};
    case K::kHardSigmoid: return {kind, 0.2f, 0.5f};
    case K::kElu: return {kind, 1.0f, 0.0f};
    default: return {kind, 0.0f, 0.0f};
  }
}

}  // namespace

std::string resolveRecurrentActivations(const std::vector<std::string>& names, const std::vector<float>& alphas,
                                        const std::vector<float>& betas, std::vector<RecurrentActivation>& out) {
  out.clear();
  size_t nextAlpha = 0, nextBeta = 0;
  for (const auto& name : names) {
    auto kind = parseRecurrentActivation(name);
    if (!kind)
      return "activation '" + name + "' is not one ONNX defines for recurrent layers (Sigmoid, Tanh, Relu, Affine, "
             "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)";
    RecurrentActivation f = withDefaults(*kind);
    if (alphaCount(*kind) && nextAlpha < alphas.size()) f.alpha = alphas[nextAlpha++];
    if (betaCount(*kind) && nextBeta < betas.size()) f.beta = betas[nextBeta++];
    out.push_back(f);
  }
  return "";
}

void applyActivation(const RecurrentActivation& f, float* v, int64_t n) {
  const float a = f.alpha, b = f.beta;
  using K = RecurrentActivationKind;
  switch (f.kind) {
    case K::kSigmoid:
      for (int64_t i = 0; i < n; ++i) v[i] = 1.0f / (1.0f + std::exp(-v[i]));
      break;
    case K::kTanh:
      for (int64_t i = 0; i < n; ++i) v[i] = std::tanh(v[i]);
      break;
    case K::kRelu:
      for (int64_t i = 0; i < n; ++i) v[i] = std::max(v[i], 0.0f);
      break;
    case K::kAffine:
      for (int64_t i = 0; i < n; ++i) v[i] = a * v[i] + b;
      break;
    case K::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] >= 0.0f ? v[i] : a * v[i];
      break;
    case K::kThresholdedRelu:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] > a ? v[i] : 0.0f;
      break;
    case K::kScaledTanh:
      for (int64_t i = 0; i < n; ++i) v[i] = a * std::tanh(b * v[i]);
      break;
    case K::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) v[i] = std::clamp(a * v[i] + b, 0.0f, 1.0f);
      break;
    case K::kElu:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] >= 0.0f ? v[i] : a * (std::exp(v[i]) - 1.0f);
      break;
    case K::kSoftsign:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] / (1.0f + std::fabs(v[i]));
      break;
    case K::kSoftplus:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 20.0f ? v[i] : std::log1p(std::exp(v[i]));  // exp overflows
      break;
  }
}

}  // namespace kiln::kernels
