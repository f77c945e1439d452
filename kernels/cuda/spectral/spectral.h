#pragma once
// Signal processing on the GPU, with the CPU's semantics (kernels/cpu/signal/dft.h): DFT along one
// axis, STFT (framing, window and DFT in one pass), the window generators and MelWeightMatrix.
// Transforms are direct O(n²) sums in double, a thread per output bin (twiddles from the exact
// index k·n mod N), so every length costs the same; inverse transforms scale by 1/N. Asynchronous;
// no allocation; empty outputs are a no-op.
#include <kernels/cpu/signal/dft.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// input [outer, inputLength, inner, channels (1 real, 2 complex)] -> output [outer, outputLength,
// inner, 2]; each signal cut or zero-padded to dftLength. float32, float16, bfloat16, float64.
cudaError_t dft(const void* input, void* output, const DftLayout& layout, ElementType type, cudaStream_t stream);

struct StftShape {
  int64_t batch = 0, length = 0, channels = 1;  // signal [batch, length, channels]
  int64_t frames = 0, frameLength = 0, step = 1;
  int64_t outputLength = 0;  // bins per frame: frameLength / 2 + 1 when one-sided
};
// signal -> output [batch, frames, outputLength, 2]; window [frameLength] in the signal's type, or
// null for ones. Each windowed sample is rounded to the signal's type first, as on the CPU.
cudaError_t stft(const void* signal, const void* window, void* output, const StftShape& shape, ElementType type,
                 cudaStream_t stream);

// dst [size]: the window in double, then converted to `type` (any numeric type; integers truncate).
cudaError_t windowFunction(void* dst, int64_t size, WindowKind kind, bool periodic, ElementType type,
                           cudaStream_t stream);

// dst [dftLength / 2 + 1, melBins]: ONNX's triangular mel filters (any numeric type); the band's
// edges are one double each on the device (they are tensors computed at run time).
cudaError_t melWeightMatrix(void* dst, int64_t melBins, int64_t dftLength, int64_t sampleRate,
                            const double* lowerHertz, const double* upperHertz, ElementType type, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
