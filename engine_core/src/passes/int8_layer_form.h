#pragma once
// What the two INT8 steps share about the layers they turn into kiln.QuantizedConv /
// kiln.QuantizedMatMul: which layers have an int8 form (Conv / ConvTranspose / MatMul / Gemm, plain
// or fused with an epilogue), the quantized layer that replaces one, and a Gemm's B and C in the
// MatMul form the quantized op takes (B as [K, N], beta * C as a per-column bias).
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <optional>
#include <string>

namespace kiln::passes {

enum class Int8Form { kConv, kConvTranspose, kMatMul, kGemm };

// The form of a Conv / ConvTranspose / MatMul / Gemm layer or a kiln.FusedConv / FusedMatMul over
// one; nullopt for any other layer.
std::optional<Int8Form> int8FormOf(const Layer& layer);
// The ai.onnx op the layer computes (itself, or a fused layer's base).
Layer int8BaseOf(const Layer& layer);
// The quantized layer replacing `layer` (name, outputs, origins, attributes, the precision it
// computes in: int8, fp8 or fp4), its inputs still to be made.
Layer quantizedLayerFor(const Layer& layer, Int8Form form, Precision precision = Precision::kINT8);

// [rows, columns] -> [columns, rows], any element type.
HostTensor transposed(const HostTensor& m);
// Why Gemm's C (a float32 constant, or null when not constant) cannot be a bias of one value per
// output column ("" when it can).
std::string gemmBiasProblem(const HostTensor* c, int64_t columns);
// beta * C as [columns] values.
HostTensor gemmColumnBias(const HostTensor& c, float beta, int64_t columns);

}  // namespace kiln::passes
