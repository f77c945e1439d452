#include "recurrent.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <algorithm>
#include <cmath>

namespace kiln::kernels::cuda {
namespace {

constexpr int kRecurrentThreads = 256;
constexpr uint64_t kRecurrentSharedLimit = 48 * 1024;

__device__ __forceinline__ float activate(const RecurrentActivation& f, float v) {
  const float a = f.alpha, b = f.beta;
  using K = RecurrentActivationKind;
  switch (f.kind) {
    case K::kSigmoid: return 1.0f / (1.0f + expf(-v));
    case K::kTanh: return tanhf(v);
    case K::kRelu: return fmaxf(v, 0.0f);
    case K::kAffine: return a * v + b;
    case K::kLeakyRelu: return v >= 0.0f ? v : a * v;
    case K::kThresholdedRelu: return v > a ? v : 0.0f;
    case K::kScaledTanh: return a * tanhf(b * v);
    case K::kHardSigmoid: return fminf(fmaxf(a * v + b, 0.0f), 1.0f);
    case K::kElu: return v >= 0.0f ? v : a * (expf(v) - 1.0f);
    case K::kSoftsign: return v / (1.0f + fabsf(v));
    case K::kSoftplus: return v > 20.0f ? v : log1pf(expf(v));  // exp overflows
  }
  return v;
}

__device__ __forceinline__ float clipped(float v, float clip) { return clip > 0.0f ? fminf(fmaxf(v, -clip), clip) : v; }

// out[j] = Σ_k m[j, k] · v[k] for j < rows: a warp per row, lanes over k, so m's rows are read
// coalesced. Every lane of a warp runs the same rows (the shuffles need the whole warp).
template <class T>
__device__ void matVec(const T* m, const float* v, float* out, int64_t rows, int64_t cols) {
  const int lane = int(threadIdx.x % 32), warps = int(blockDim.x / 32);
  for (int64_t j = threadIdx.x / 32; j < rows; j += warps) {
    float acc = 0.0f;
    for (int64_t k = lane; k < cols; k += 32) acc += toCompute(m[j * cols + k]) * v[k];
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xFFFFFFFFu, acc, offset);
    if (lane == 0) out[j] = acc;
  }
}

template <class T>
__device__ __forceinline__ float valueOr(const T* p, int64_t i) {
  return p ? float(toCompute(p[i])) : 0.0f;
}

// One block per (batch entry blockIdx.x, direction blockIdx.y), all of its steps.
template <class T>
__global__ void __launch_bounds__(kRecurrentThreads) recurrentKernel(RecurrentShape shape, RecurrentTensorsDevice t) {
  extern __shared__ float recurrentShared[];
  const int64_t b = blockIdx.x, B = shape.batch, S = shape.steps, H = shape.hidden;
  const int d = int(blockIdx.y), D = shape.directions;
  const RecurrentCellKind cell = shape.cell;
  const int64_t GH = recurrentGates(cell) * H;
  float* h = recurrentShared;  // [H]
  float* c = h + H;            // [H] (LSTM)
  float* gates = c + H;        // [GH]: the recurrent products, then the gates
  float* rh = gates + GH;      // [H] (GRU: r ⊙ h)
  const T* r = static_cast<const T*>(t.r) + d * GH * H;
  const T* wb = t.bias ? static_cast<const T*>(t.bias) + d * 2 * GH : nullptr;
  const T* rb = wb ? wb + GH : nullptr;
  const T* p = t.peephole ? static_cast<const T*>(t.peephole) + d * 3 * H : nullptr;
  const RecurrentActivation f = shape.activations[d][0], g = shape.activations[d][1], hAct = shape.activations[d][2];
  const float clip = shape.clip;
  const int64_t state = shape.batchMajor ? (b * D + d) * H : (d * B + b) * H;
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
    h[i] = valueOr(static_cast<const T*>(t.initialH), state + i);
    c[i] = valueOr(static_cast<const T*>(t.initialC), state + i);
  }
  const int64_t given = t.lengths ? int64_t(t.lengths[b]) : S;
  const int64_t length = given < 0 ? 0 : given > S ? S : given;
  const bool reverse = d == 1 || shape.reverse;
  const bool splitGru = cell == RecurrentCellKind::kGru && !shape.linearBeforeReset;
  T* y = static_cast<T*>(t.y);
  __syncthreads();
  for (int64_t s = 0; s < length; ++s) {
    const int64_t time = reverse ? length - 1 - s : s;
    const int64_t row = shape.batchMajor ? b * S + time : time * B + b;
    const float* x = t.projected + (d * S * B + row) * GH;
    // Bias sums Wb + Rb, except GRU's h gate with linear_before_reset (r scales Rbh).
    auto bias = [&](int64_t j) { return valueOr(wb, j) + valueOr(rb, j); };
    matVec(r, h, gates, splitGru ? 2 * H : GH, H);
    __syncthreads();
    if (cell == RecurrentCellKind::kRnn) {
      for (int64_t i = threadIdx.x; i < H; i += blockDim.x) h[i] = activate(f, clipped(gates[i] + x[i] + bias(i), clip));
    } else if (cell == RecurrentCellKind::kGru) {
      for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
        const float z = activate(f, clipped(gates[i] + x[i] + bias(i), clip));
        const float reset = activate(f, clipped(gates[H + i] + x[H + i] + bias(H + i), clip));
        gates[i] = z;
        if (splitGru) {
          rh[i] = reset * h[i];
        } else {
          const float candidate = reset * (gates[2 * H + i] + valueOr(rb, 2 * H + i));
          const float hh = activate(g, clipped(candidate + x[2 * H + i] + valueOr(wb, 2 * H + i), clip));
          h[i] = (1.0f - z) * hh + z * h[i];
        }
      }
      if (splitGru) {
        __syncthreads();
        matVec(r + 2 * H * H, rh, gates + 2 * H, H, H);
        __syncthreads();
        for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
          const float hh = activate(g, clipped(gates[2 * H + i] + x[2 * H + i] + bias(2 * H + i), clip));
          h[i] = (1.0f - gates[i]) * hh + gates[i] * h[i];
        }
      }
    } else {
      for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
        const float cPrev = c[i];
        float in = gates[i] + x[i] + bias(i), out = gates[H + i] + x[H + i] + bias(H + i);
        float forget = gates[2 * H + i] + x[2 * H + i] + bias(2 * H + i);
        const float candidate = activate(g, clipped(gates[3 * H + i] + x[3 * H + i] + bias(3 * H + i), clip));
        if (p) {
          in += toCompute(p[i]) * cPrev;
          forget += toCompute(p[2 * H + i]) * cPrev;
        }
        in = activate(f, clipped(in, clip));
        forget = shape.inputForget ? 1.0f - in : activate(f, clipped(forget, clip));
        const float cNext = forget * cPrev + in * candidate;
        if (p) out += toCompute(p[H + i]) * cNext;
        out = activate(f, clipped(out, clip));
        c[i] = cNext;
        h[i] = activate(hAct, cNext) * out;
      }
    }
    if (y) {
      const int64_t at = shape.batchMajor ? ((b * S + time) * D + d) * H : ((time * D + d) * B + b) * H;
      for (int64_t i = threadIdx.x; i < H; i += blockDim.x) y[at + i] = fromCompute<T>(h[i]);
    }
    __syncthreads();
  }
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
    if (t.finalH) static_cast<T*>(t.finalH)[state + i] = fromCompute<T>(h[i]);
    if (t.finalC) static_cast<T*>(t.finalC)[state + i] = fromCompute<T>(c[i]);
  }
}

}  // namespace

uint64_t recurrentSharedBytes(RecurrentCellKind cell, int64_t hidden) {
  return uint64_t(recurrentGates(cell) + 3) * uint64_t(std::max<int64_t>(hidden, 0)) * sizeof(float);
}

bool recurrentFits(RecurrentCellKind cell, int64_t hidden) {
  return recurrentSharedBytes(cell, hidden) <= kRecurrentSharedLimit;
}

cudaError_t recurrentSequence(const RecurrentShape& shape, const RecurrentTensorsDevice& tensors, ElementType storage,
                              cudaStream_t stream) {
  if (shape.steps < 0 || shape.batch < 0 || shape.hidden < 0 || shape.directions < 1 || shape.directions > 2 ||
      !recurrentFits(shape.cell, shape.hidden) || shape.batch > 0x7FFFFFFF)
    return cudaErrorInvalidValue;
  if (storage != ElementType::kFloat32 && storage != ElementType::kFloat16 && storage != ElementType::kBFloat16)
    return cudaErrorInvalidValue;
  return dispatchFloat(storage, [&](auto tag) {
    using T = decltype(tag);
    if (shape.batch == 0 || shape.hidden == 0) return cudaSuccess;
    const dim3 grid(unsigned(shape.batch), unsigned(shape.directions));
    recurrentKernel<T><<<grid, kRecurrentThreads, recurrentSharedBytes(shape.cell, shape.hidden), stream>>>(shape,
                                                                                                          tensors);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
