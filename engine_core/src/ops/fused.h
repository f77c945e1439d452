#pragma once
// Names shared by the fusion passes, the fused ops' schemas and their kernels (domain "kiln").
// The semantics of each fused op are documented at the top of ops/fused.cpp.
#include <kiln/network.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

namespace kiln::fused {

inline constexpr const char* kDomain = "kiln";
inline constexpr const char* kFusedConv = "FusedConv";
inline constexpr const char* kFusedMatMul = "FusedMatMul";
inline constexpr const char* kPointwise = "Pointwise";
inline constexpr const char* kAttention = "Attention";
inline constexpr const char* kFusedConvPool = "FusedConvPool";
inline constexpr const char* kSqueezeExcitation = "SqueezeExcitation";

// Epilogue attributes of FusedConv / FusedMatMul.
inline constexpr const char* kBase = "base";  // ai.onnx op computed first: Conv, ConvTranspose, MatMul, Gemm
inline constexpr const char* kActivation = "activation";
inline constexpr const char* kActivationAlpha = "activation_alpha";
inline constexpr const char* kActivationBeta = "activation_beta";
inline constexpr const char* kResidualBeforeActivation = "residual_before_activation";

// The ai.onnx layer a FusedConv / FusedMatMul computes before its epilogue: the same name, the
// base op type, its opset (kept in the fused layer's opsetVersion) and its own attributes.
inline Layer baseLayer(const Layer& fused) {
  Layer base = fused;
  base.domain.clear();
  base.opType = fused.attrString(kBase);
  for (const char* key : {kBase, kActivation, kActivationAlpha, kActivationBeta, kResidualBeforeActivation})
    base.attributes.erase(key);
  return base;
}

// kiln.FusedConvPool: a kiln.FusedConv's attributes plus its MaxPool's, each named kPoolPrefix +
// the MaxPool's name, and the MaxPool's opset in kPoolOpset.
inline constexpr const char* kPoolPrefix = "pool_";
inline constexpr const char* kPoolOpset = "pool_opset";

// The kiln.FusedConv a FusedConvPool computes first (its output named after the layer's + "_conv").
inline Layer convOfConvPool(const Layer& convPool) {
  Layer conv = convPool;
  conv.opType = kFusedConv;
  std::erase_if(conv.attributes, [](const auto& a) { return a.first.rfind(kPoolPrefix, 0) == 0; });
  for (std::string& out : conv.outputs) out += "_conv";
  return conv;
}

// The MaxPool a FusedConvPool applies to its convolution's output.
inline Layer poolOfConvPool(const Layer& convPool) {
  Layer pool;
  pool.name = convPool.name;
  pool.opType = "MaxPool";
  pool.opsetVersion = convPool.attrInt(kPoolOpset, 12);
  for (const auto& [key, value] : convPool.attributes)
    if (key.rfind(kPoolPrefix, 0) == 0 && key != kPoolOpset)
      pool.attributes[key.substr(std::strlen(kPoolPrefix))] = value;
  pool.inputs = {convOfConvPool(convPool).outputs.at(0)};
  pool.outputs = convPool.outputs;
  return pool;
}

// kiln.SqueezeExcitation: FC1's epilogue attributes named kSqueezePrefix + FusedConv's
// (squeeze_activation, squeeze_activation_alpha, squeeze_activation_beta), FC2's kExcitePrefix + them.
inline constexpr const char* kSqueezePrefix = "squeeze_";
inline constexpr const char* kExcitePrefix = "excite_";

// kiln.SqueezeExcitation's inputs; the biases may be absent (empty names).
namespace squeeze_excitation {
inline constexpr size_t kX = 0;
inline constexpr size_t kW1 = 1;  // [R, C, 1, ...]
inline constexpr size_t kB1 = 2;  // [R]
inline constexpr size_t kW2 = 3;  // [C2, R, 1, ...]
inline constexpr size_t kB2 = 4;  // [C2]
inline constexpr size_t kInputCount = 5;
}  // namespace squeeze_excitation

// kiln.Attention's tensors stored with their rows and their last batch dim swapped, [..., L, H, D]
// for the [..., H, L, D] the attention computes on: how exporters lay out heads around attention,
// so FuseAttention absorbs the Transposes between. One int attribute per tensor, default 0.
inline constexpr const char* kAttentionInterleaved[4] = {"q_interleaved", "k_interleaved", "v_interleaved",
                                                         "out_interleaved"};
inline constexpr size_t kAttentionOutput = 3;  // kAttentionInterleaved's index for the output

// Whether tensor `which` (0 Q, 1 K, 2 V, kAttentionOutput) is stored interleaved.
inline bool attentionInterleaved(const Layer& attention, size_t which) {
  return attention.attrInt(kAttentionInterleaved[which], 0) != 0;
}

// kiln.Attention with qkv_packed = 1 reads Q, K and V from one tensor [..., L, 3, H, D] (a merged
// QKV projection, viewed): inputs 0, 1 and 2 all name it, and part i (Q, K, V) is [..., L, i, H, D],
// stored interleaved. The kernels read the parts in place, so the Split after the projection goes.
inline constexpr const char* kAttentionPacked = "qkv_packed";
inline constexpr size_t kPackedPartsDim = 3;  // counted from the end: [..., L, 3, H, D]

inline bool attentionPacked(const Layer& attention) { return attention.attrInt(kAttentionPacked, 0) != 0; }

// The dims one packed part is stored with: the packed tensor's without its parts dim.
template <class Dims>
Dims packedPartDims(Dims packed) {
  if (packed.size() >= kPackedPartsDim + 1) packed.erase(packed.end() - std::ptrdiff_t(kPackedPartsDim));
  return packed;
}

// The dims with the row dim (rank - 2) and the last batch dim (rank - 3) swapped: interleaved to
// computed and back. Dims of rank below 3 come back as they are.
template <class Dims>
Dims swapRowsAndHeads(Dims dims) {
  if (dims.size() >= 3) std::swap(dims[dims.size() - 3], dims[dims.size() - 2]);
  return dims;
}

}  // namespace kiln::fused
