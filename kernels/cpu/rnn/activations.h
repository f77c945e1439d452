#pragma once
// The activation functions ONNX recurrent layers accept (RNN, GRU, LSTM `activations` attribute).
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::kernels {

enum class RecurrentActivationKind {
  kSigmoid, kTanh, kRelu, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign, kSoftplus,
};

struct RecurrentActivation {
  RecurrentActivationKind kind = RecurrentActivationKind::kSigmoid;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// Resolves an `activations` attribute (names matched case-insensitively) with activation_alpha /
// activation_beta, whose values the parameterised functions consume in order; the others use their
// defaults. Returns "" on success, else what is wrong.
std::string resolveRecurrentActivations(const std::vector<std::string>& names, const std::vector<float>& alphas,
                                        const std::vector<float>& betas, std::vector<RecurrentActivation>& out);

// Applies `f` to v[0, n) in place.
void applyActivation(const RecurrentActivation& f, float* v, int64_t n);

}  // namespace kiln::kernels
