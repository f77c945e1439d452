#pragma once
// The epilogue of a fused Conv / MatMul, applied in place over its output:
//   y = act(y + bias + residual)   or   y = act(y + bias) + residual
// Either in one pass over the whole output (applyEpilogue), or span by span from inside the
// producing kernel while its output block is still in cache (applyEpilogueSpan).
#include <cstdint>

namespace kiln::kernels {

enum class Activation { kNone, kRelu, kClip, kSigmoid, kHardSigmoid, kHardSwish, kSiLU, kGelu, kGeluTanh, kLeakyRelu, kTanh };

struct Epilogue {
  Activation activation = Activation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu: alpha
  // bias[(i / biasInner) % biasLength] is added to element i (per channel or per column).
  const float* bias = nullptr;
  int64_t biasLength = 1, biasInner = 1;
  const float* residual = nullptr;  // same element count as the output
  bool residualBeforeActivation = true;

  bool isIdentity() const { return activation == Activation::kNone && !bias && !residual; }
};

// `epilogue` with a per-channel bias added (none when null), for an output of `channels` planes of
// `planeSize` elements each (a convolution's bias).
inline Epilogue withChannelBias(Epilogue epilogue, const float* bias, int64_t channels, int64_t planeSize) {
  if (bias) {
    epilogue.bias = bias;
    epilogue.biasLength = channels;
    epilogue.biasInner = planeSize;
  }
  return epilogue;
}

// The whole output, data[0, count), on the thread pool.
void applyEpilogue(float* data, int64_t count, const Epilogue& epilogue);

// Elements [first, first + count) of the output that starts at `output` (bias and residual are
// indexed by the element's position in the whole output), on the calling thread.
void applyEpilogueSpan(float* output, int64_t first, int64_t count, const Epilogue& epilogue);

}  // namespace kiln::kernels
