#pragma once
// The quantization step of an implicit (calibrated) INT8, FP8 or FP4 build: which Conv / MatMul /
// Gemm layers (plain or fused) can become quantized layers and in which precision, and the pass
// that replaces them by kiln.QuantizedConv / kiln.QuantizedMatMul with the calibrated activation
// scales and quantized weights (int8 / fp8 per channel, symmetric: scale = amax / 127 or / 448;
// an fp8 MatMul's / Gemm's one for the whole tensor;
// fp4 as NVFP4, see ops/quantized.cpp).
#include "pass.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace kiln {

struct Int8Candidate {
  size_t layer = 0;                      // index in the network
  std::vector<std::string> activations;  // its float operands, quantized on entry: they need scales
  Precision precision = Precision::kINT8;  // int8, fp8 or fp4
};

struct Int8Survey {
  std::vector<Int8Candidate> candidates;
  std::map<std::string, std::string> keptFloat;  // layer name -> why it stays in a float precision
  std::set<std::string> activations() const;    // every candidate's activations
};

// Why the engine's backend cannot run a quantized layer ("" when it can), asked with the layer that
// would replace the original (its op type and attributes; its inputs are not made yet).
using Int8Refusal = std::function<std::string(const Layer& quantizedLayer)>;

// The network's Conv / ConvTranspose / MatMul / Gemm layers (and kiln.FusedConv / FusedMatMul over
// them), each a candidate in the first of `precisions` (the build's quantized precisions, narrowest
// first) that it and the backend take, or kept in float with the reasons. `layerPrecisions` are
// the build's per-layer constraints: a layer held to a float precision stays, one held to int8,
// fp8 or fp4 is tried in that precision only.
Int8Survey surveyInt8Layers(const Network& network, const std::vector<Precision>& precisions,
                            const std::map<std::string, Precision>& layerPrecisions, const Int8Refusal& refusal);

// Replaces `survey`'s candidates (layer indices into the network the pass runs on) by quantized
// layers; one whose activation has no entry in `scales` stays and is added to survey.keptFloat.
std::unique_ptr<Pass> createQuantizeLayersPass(Int8Survey& survey, const std::map<std::string, float>& scales);

}  // namespace kiln
