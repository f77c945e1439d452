#pragma once
// Names shared by the INT4 weight-only steps (passes/int4_weights.cpp for `--int4-weights`,
// passes/lower_matmul_nbits.cpp for onnxruntime's MatMulNBits), the ops' schemas
// (ops/weight_only.cpp, ops/weight_only_nbits.cpp) and their CPU kernels
// (backends/cpu/ops/weight_only.cpp). The storage format and arithmetic are
// kernels/cpu/quant/int4_weight_format.h's.
#include "fused.h"

#include <optional>
#include <string>

namespace kiln::weight_only {

inline constexpr const char* kWeightOnlyMatMul = "WeightOnlyMatMul";

// kiln.WeightOnlyMatMul: inputs 0-3 sit where kiln.FusedMatMul has them (A, B, bias, residual),
// so the epilogue helpers read both alike; B is the packed int4 weights. Then the scales and the
// optional zero points. Attributes K, N, group_size, and FusedMatMul's epilogue attributes.
inline constexpr size_t kScalesInput = 4;
inline constexpr size_t kZeroPointsInput = 5;
inline constexpr size_t kMinInputCount = 5;
inline constexpr size_t kMaxInputCount = 6;
inline constexpr const char* kK = "K";
inline constexpr const char* kN = "N";
inline constexpr const char* kGroupSize = "group_size";

// onnxruntime's contrib op: inputs A, B, scales, [zero_points], [g_idx], [bias].
inline constexpr const char* kMicrosoftDomain = "com.microsoft";
inline constexpr const char* kMatMulNBits = "MatMulNBits";
inline constexpr size_t kNBitsScalesInput = 2;
inline constexpr size_t kNBitsZeroPointsInput = 3;
inline constexpr size_t kNBitsGroupIndexInput = 4;
inline constexpr size_t kNBitsBiasInput = 5;

inline bool isWeightOnlyLayer(const Layer& layer) {
  return layer.domain == fused::kDomain && layer.opType == kWeightOnlyMatMul;
}
inline bool isMatMulNBits(const Layer& layer) {
  return layer.domain == kMicrosoftDomain && layer.opType == kMatMulNBits;
}

// A weight matrix [K, N] as kiln.WeightOnlyMatMul stores it.
struct Int4Tensors {
  HostTensor packed;                // uint8 [N, groups, groupSize / 2]
  HostTensor scales;                // float32 [N, groups]
  std::optional<HostTensor> zeros;  // int8 [N, groups]
  int64_t k = 0, n = 0, groupSize = 0;
};

// A MatMulNBits layer's K, N and block size, checked against the spec's rules and what Kiln reads
// (4 bits, no g_idx, no prepacked weights). `why` gets the first problem (empty: none).
struct NBitsShape {
  int64_t k = 0, n = 0, blockSize = 0;
};
std::optional<NBitsShape> readNBitsShape(const Layer& layer, std::string& why);

// MatMulNBits' B [N, blocks, blockSize / 2] (uint8, unsigned nibbles), scales (float32 or
// float16, [N, blocks] or flat) and zero points (packed uint8 [N, ceil(blocks / 2)] or flat; null:
// 8) as Kiln's signed format: the same values, exactly. Throws kiln::Error naming `where` and the
// input when a tensor does not match the spec (float zero points, which Kiln does not take, included).
Int4Tensors int4FromMatMulNBits(const NBitsShape& shape, const HostTensor& b, const HostTensor& scales,
                                const HostTensor* zeroPoints, const std::string& where);

}  // namespace kiln::weight_only
