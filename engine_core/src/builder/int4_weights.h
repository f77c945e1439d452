#pragma once
// The INT4 weight-only steps of a build (passes/int4_weights.h). Before the graph passes, every
// onnxruntime MatMulNBits of the model becomes kiln.WeightOnlyMatMul (or, where the engine's
// backend has no int4 kernel, a float MatMul of its dequantized weights), so the passes see an
// ordinary layer. After them (and after the INT8 step), `--int4-weights` quantizes the constant
// weights of the MatMul / Gemm layers left in float.
#include "../backends/backend.h"

#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <map>
#include <string>

namespace kiln {

// Fails (kInvalidArgument) on a group size other than 32, 64 or 128 when int4 weights are asked for.
void checkInt4Options(const BuilderConfig& config);

// Lowers the network's MatMulNBits layers; adds the pass to report.passes and a warning naming those
// made float. Returns those layers with why.
std::map<std::string, std::string> lowerMatMulNBits(Network& network, const BuilderConfig& config,
                                                    const Backend& engine, BuildReport& report);

// BuilderConfig::int4Weights: quantizes the weights of the MatMul / Gemm layers it can; adds the pass to report.passes and a warning
// naming the layers that stay float. Returns those layers with why.
std::map<std::string, std::string> quantizeWeightsToInt4(Network& network, const BuilderConfig& config,
                                                         const Backend& engine, BuildReport& report);

}  // namespace kiln
