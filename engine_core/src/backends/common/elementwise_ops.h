#pragma once
// Which elementwise kernel op an ONNX layer is, with its attributes read (ONNX defaults), shared by
// every backend so that the CPU and CUDA kernels compute the same function for the same layer.
#include <kiln/network.h>

#include <kernels/cpu/elementwise/binary.h>
#include <kernels/cpu/elementwise/unary.h>

#include <optional>

namespace kiln {

struct UnaryChoice {
  kernels::UnaryOp op;
  kernels::UnaryParams params;
};

// The math functions and activations (Relu, Sigmoid, LeakyRelu, Gelu, ...); not Clip, Not,
// IsNaN, IsInf, which have kernels of their own.
std::optional<UnaryChoice> unaryOpOf(const Layer& layer);

// Two-input broadcasting ops: arithmetic (Add ... PRelu, Mod, BitShift, bitwise), comparisons
// and logic; not Pow, Where and the variadic Sum/Mean/Min/Max.
std::optional<kernels::BinaryOp> binaryOpOf(const Layer& layer);

}  // namespace kiln
