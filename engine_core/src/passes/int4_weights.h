#pragma once
// INT4 weight-only layers (kiln.WeightOnlyMatMul, ops/weight_only.h): the pass that quantizes the
// constant weights of MatMul / Gemm / kiln.FusedMatMul layers (`--int4-weights`), and the one that
// turns onnxruntime's MatMulNBits into the same layer, or into a float MatMul with its weights
// dequantized where the engine's backend has no int4 kernel.
#include "pass.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace kiln {

// Group sizes `--int4-weights` takes along K.
bool isValidInt4GroupSize(int64_t groupSize);
// Weights with fewer values than this stay float: packing them saves little and costs accuracy.
inline constexpr int64_t kMinInt4WeightValues = 4096;

// Why the engine's backend cannot run a weight-only layer ("" when it can), asked with the layer
// that would replace the original (op type and attributes; its inputs are not made yet).
using Int4Refusal = std::function<std::string(const Layer& weightOnlyLayer)>;

struct Int4Outcome {
  // MatMul / Gemm layers (or MatMulNBits made float) that stay float, with why ("not int4: ...").
  std::map<std::string, std::string> keptFloat;
  int64_t layers = 0;           // weight-only layers made
  int64_t floatWeightBytes = 0;  // the float32 weights they replace (each constant once)
  int64_t int4WeightBytes = 0;   // their packed weights, scales and zero points
};

struct Int4WeightOptions {
  int64_t groupSize = 128;
  std::map<std::string, Precision> layerPrecisions;  // a layer held to a precision stays float
  Int4Refusal refusal;
};

std::unique_ptr<Pass> createQuantizeWeightsInt4Pass(Int4WeightOptions options, Int4Outcome& outcome);
std::unique_ptr<Pass> createLowerMatMulNBitsPass(Int4Refusal refusal, Int4Outcome& outcome);

}  // namespace kiln
