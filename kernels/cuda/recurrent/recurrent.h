#pragma once
// The time loop of ONNX recurrent layers (RNN, GRU, LSTM) on the GPU, after the input projection:
// the caller has computed X·Wᵀ for every step and direction (one GEMM), and this runs every step's
// recurrent product and gate arithmetic in one launch, a block per (batch entry, direction) that
// keeps its state in shared memory (batch entries and directions never meet). Semantics are the
// CPU's (kernels/cpu/rnn/recurrent.h): gate orders RNN i, GRU zrh, LSTM iofc, peepholes P_i P_o
// P_f, steps past a batch entry's length leave y alone and keep the state. Arithmetic is fp32;
// weights, states and outputs are in the storage type (float32, float16, bfloat16).
#include <kernels/cpu/rnn/activations.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

enum class RecurrentCellKind : uint8_t { kRnn, kGru, kLstm };

constexpr int recurrentGates(RecurrentCellKind cell) {
  return cell == RecurrentCellKind::kRnn ? 1 : cell == RecurrentCellKind::kGru ? 3 : 4;
}

struct RecurrentShape {
  RecurrentCellKind cell = RecurrentCellKind::kRnn;
  int64_t steps = 0, batch = 0, hidden = 0;
  int directions = 1;  // 2: direction 1 runs in reverse
  bool reverse = false;     // direction 0 runs in reverse ("reverse")
  bool batchMajor = false;  // layout 1: x rows, y and the states are batch-major
  float clip = 0.0f;        // > 0: pre-activations clamped to [-clip, clip]
  bool linearBeforeReset = false, inputForget = false;
  // Per direction: f, g, h (ONNX's names; RNN uses f, GRU f and g).
  RecurrentActivation activations[2][3];
};

struct RecurrentTensorsDevice {
  // fp32 [directions, steps * batch rows in x's order, gates * hidden]: X·Wᵀ, no bias.
  const float* projected = nullptr;
  const void* r = nullptr;         // [directions, gates * hidden, hidden]
  const void* bias = nullptr;      // [directions, 2 * gates * hidden] (Wb, Rb) or null
  const void* peephole = nullptr;  // [directions, 3 * hidden] or null
  const int32_t* lengths = nullptr;  // [batch] or null: every entry runs `steps`
  // States: [directions, batch, hidden], or [batch, directions, hidden] when batchMajor.
  const void* initialH = nullptr;  // null: zeros
  const void* initialC = nullptr;  // LSTM; null: zeros
  void* finalH = nullptr;          // may be null
  void* finalC = nullptr;          // may be null
  // [steps, directions, batch, hidden], or [batch, steps, directions, hidden]; may be null. The
  // caller zeroes it first: steps past an entry's length are not written.
  void* y = nullptr;
};

// Shared memory one block needs; the launch refuses hidden sizes whose state does not fit in 48 KiB.
uint64_t recurrentSharedBytes(RecurrentCellKind cell, int64_t hidden);
bool recurrentFits(RecurrentCellKind cell, int64_t hidden);

// Lengths outside [0, steps] are clamped, as on the CPU.
cudaError_t recurrentSequence(const RecurrentShape& shape, const RecurrentTensorsDevice& tensors, ElementType storage,
                              cudaStream_t stream);

}  // namespace kiln::kernels::cuda
