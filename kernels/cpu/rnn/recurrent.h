#pragma once
// One direction of an ONNX recurrent layer (RNN, GRU, LSTM) in float32, either layout. The input
// projection of all steps is one GEMM; each step then does one GEMM with the recurrent weights and
// the gate arithmetic.
#include "activations.h"

#include <cstdint>

namespace kiln::kernels {

enum class RecurrentCell { kRnn, kGru, kLstm };

inline int gateCount(RecurrentCell cell) { return cell == RecurrentCell::kRnn ? 1 : cell == RecurrentCell::kGru ? 3 : 4; }

struct RecurrentConfig {
  RecurrentCell cell = RecurrentCell::kRnn;
  int64_t steps = 0, batch = 0, inputSize = 0, hidden = 0;
  bool reverse = false;
  bool batchMajor = false;  // x is [batch, steps, inputSize] (ONNX layout 1) instead of [steps, batch, inputSize]
  float clip = 0.0f;               // > 0: gate pre-activations are clamped to [-clip, clip]
  bool linearBeforeReset = false;  // GRU
  bool inputForget = false;        // LSTM: forget gate = 1 - input gate
  // f for the gates, g for the candidate, h for the LSTM cell output (ONNX's f, g, h).
  RecurrentActivation f, g, h;
};

struct RecurrentTensors {
  const float* x = nullptr;         // [steps, batch, inputSize] or [batch, steps, inputSize]
  const float* w = nullptr;         // [gates * hidden, inputSize] (ONNX gate order: RNN i, GRU zrh, LSTM iofc)
  const float* r = nullptr;         // [gates * hidden, hidden]
  const float* bias = nullptr;      // [2 * gates * hidden]: Wb then Rb; null for zeros
  const float* peephole = nullptr;  // LSTM [3 * hidden]: P_i, P_o, P_f; null for zeros
  const int32_t* lengths = nullptr; // [batch] valid steps per batch entry; null: all `steps`
  // States: batch entry b at + b * stateStride (hidden values each).
  const float* initialH = nullptr;  // null for zeros
  const float* initialC = nullptr;  // LSTM; null for zeros
  float* finalH = nullptr;          // may be null
  float* finalC = nullptr;          // LSTM; may be null
  int64_t stateStride = 0;
  float* y = nullptr;               // step t, batch b at y + t * yStepStride + b * yBatchStride; may be null
  int64_t yStepStride = 0, yBatchStride = 0;
};

// Steps past a batch entry's length leave y untouched (zeros when the caller zeroed it) and keep its
// state; in reverse, an entry runs from its last valid step back to step 0.
void runRecurrentDirection(const RecurrentConfig& config, const RecurrentTensors& tensors);

}  // namespace kiln::kernels
