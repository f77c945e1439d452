#include "fused_epilogue.h"

#include "../../ops/fused.h"

#include <kiln/error.h>

#include <map>

namespace kiln {

std::optional<kernels::Activation> activationNamed(const std::string& name) {
  using kernels::Activation;
  static const std::map<std::string, Activation> byName = {{"", Activation::kNone},
                                                           {"Relu", Activation::kRelu},
                                                           {"Clip", Activation::kClip},
                                                           {"Sigmoid", Activation::kSigmoid},
                                                           {"HardSigmoid", Activation::kHardSigmoid},
                                                           {"HardSwish", Activation::kHardSwish},
                                                           {"SiLU", Activation::kSiLU},
                                                           {"Gelu", Activation::kGelu},
                                                           {"GeluTanh", Activation::kGeluTanh},
                                                           {"LeakyRelu", Activation::kLeakyRelu},
                                                           {"Tanh", Activation::kTanh}};
  auto it = byName.find(name);
  if (it == byName.end()) return std::nullopt;
  return it->second;
}

FusedEpilogue readFusedEpilogue(const Layer& layer, const std::string& prefix) {
  FusedEpilogue e;
  const std::string key = prefix + fused::kActivation;
  const std::string name = layer.attrString(key, "");
  const auto activation = activationNamed(name);
  if (!activation)
    throw Error(ErrorCode::kInvalidModel,
                layer.describe() + ": unknown " + key + " '" + name + "'; expected one of " + kActivationNames);
  e.activation = *activation;
  e.alpha = layer.attrFloat(prefix + fused::kActivationAlpha, 0.0f);
  e.beta = layer.attrFloat(prefix + fused::kActivationBeta, 0.0f);
  e.residualBeforeActivation = layer.attrInt(prefix + fused::kResidualBeforeActivation, 1) != 0;
  return e;
}

}  // namespace kiln
