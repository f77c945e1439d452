#pragma once
// The epilogue attributes of a kiln.FusedConv / kiln.FusedMatMul layer (ops/fused.cpp), or of either
// stage of a kiln.SqueezeExcitation, read the same way by every backend: which activation, its
// parameters, and where the residual is added.
#include <kiln/network.h>

#include <kernels/cpu/fused/epilogue.h>

#include <optional>
#include <string>

namespace kiln {

// The activation an epilogue's `activation` attribute names ("" is none); nullopt for an unknown name.
std::optional<kernels::Activation> activationNamed(const std::string& name);

// What the names are, for messages.
inline constexpr const char* kActivationNames =
    "Relu, Clip, Sigmoid, HardSigmoid, HardSwish, SiLU, Gelu, GeluTanh, LeakyRelu, Tanh";

struct FusedEpilogue {
  kernels::Activation activation = kernels::Activation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu: alpha
  bool residualBeforeActivation = true;
};

// A fused layer's epilogue attributes, each named `prefix` + its FusedConv name (a layer with two
// epilogues, kiln.SqueezeExcitation, prefixes them); throws kiln::Error (kInvalidModel) naming the
// layer for an unknown activation.
FusedEpilogue readFusedEpilogue(const Layer& layer, const std::string& prefix = "");

// The CPU kernels' epilogue with `e`'s activation and residual placement (no bias, no residual
// values yet: the caller's).
inline kernels::Epilogue kernelEpilogueOf(const FusedEpilogue& e) {
  kernels::Epilogue k;
  k.activation = e.activation;
  k.alpha = e.alpha;
  k.beta = e.beta;
  k.residualBeforeActivation = e.residualBeforeActivation;
  return k;
}

}  // namespace kiln
