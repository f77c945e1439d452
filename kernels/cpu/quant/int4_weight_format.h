#pragma once
// INT4 weight-only quantization of a MatMul's constant B [K, N]: the storage format and the exact
// arithmetic, written once (KILN_HD) for the CPU kernel and the CUDA GEMM's prologue
// (kernels/cuda/quant/int4_gemm.cu), so a laptop computes the weights the GPU multiplies by, bit
// for bit.
//
// Storage, per output column n, in groups of G values along K (G even; the last group is short
// when G does not divide K):
//   packed  uint8 [N, groups, G / 2], groups = ceil(K / G). Byte j of group g of column n holds
//           k = g * G + 2j in its low nibble (bits 0-3) and k + 1 in its high nibble (bits 4-7),
//           the order of ONNX's INT4 type and of onnxruntime's MatMulNBits. Each nibble is a
//           two's-complement int4 q in [-8, 7]; nibbles past K are 0.
//   scales  float32 [N, groups]. fp32, not fp16: the scale the quantizer chose is the one that
//           dequantizes (no second rounding), it keeps tiny weights' groups out of fp16's
//           subnormals, and it costs 4 bytes per G weights (6% of the packed bytes at G = 128).
//   zeros   optional int8 [N, groups] in [-8, 7] (absent: 0): asymmetric imports only
//           (MatMulNBits' uint4 zero point minus 8); Kiln's own quantization is symmetric.
// Dequantization of the element at (k, n), group g = k / G:
//   w = scales[n, g] * float(q - zeros[n, g])
// q - zero is an exact small integer, so the product is the only rounding. The GEMM then
// multiplies the float activations by these float weights and accumulates in fp32.
// Quantization (Kiln's builder): per group, scale = amax / 7 (1 when the group is all zeros) and
// q = saturate(round_half_even(w / scale)) into [-8, 7], QuantizeLinear's rule (NaN gives -8).
#include <kernels/cuda/common/host_device.h>

#include <math.h>

#include <cstdint>

namespace kiln::kernels {

inline constexpr int kInt4Min = -8, kInt4Max = 7;

KILN_HD int64_t int4GroupCount(int64_t k, int64_t groupSize) { return (k + groupSize - 1) / groupSize; }

// Nibble `high` (0: bits 0-3, 1: bits 4-7) of a packed byte as a signed int4.
KILN_HD int unpackInt4(uint8_t byte, int high) { return int(((byte >> (high * 4)) & 0xF) ^ 0x8) - 8; }

// Two int4 values in [-8, 7] as one byte, `low` in bits 0-3.
KILN_HD uint8_t packInt4Pair(int low, int high) { return uint8_t((low & 0xF) | ((high & 0xF) << 4)); }

KILN_HD float int4GroupScale(float amax) { return amax > 0 ? amax / float(kInt4Max) : 1.0f; }

// saturate(round_half_even(w / scale)) into [-8, 7]; NaN gives -8, as QuantizeLinear's saturation.
KILN_HD int quantizeInt4(float w, float scale) {
  const float r = nearbyintf(w / scale);
  if (!(r >= float(kInt4Min))) return kInt4Min;
  if (r > float(kInt4Max)) return kInt4Max;
  return int(r);
}

KILN_HD float dequantizeInt4(int q, int zero, float scale) { return scale * float(q - zero); }

// MatMulNBits stores unsigned nibbles u in [0, 15] with a uint4 zero point (8 when absent):
// (u - zp) = ((u - 8) - (zp - 8)), so a byte becomes Kiln's signed nibbles by flipping bit 3 of
// each nibble, and its zero point becomes zp - 8.
KILN_HD uint8_t signedInt4PairFromUnsigned(uint8_t byte) { return uint8_t(byte ^ 0x88); }

}  // namespace kiln::kernels
