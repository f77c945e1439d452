#pragma once
// Attributes of the recurrent layers (RNN, GRU, LSTM), read and checked once for the schema and the
// CPU kernel.
#include <kiln/network.h>

#include <kernels/cpu/rnn/recurrent.h>

#include <vector>

namespace kiln {

struct RecurrentAttributes {
  kernels::RecurrentCell cell = kernels::RecurrentCell::kRnn;
  int64_t directions = 1;     // 2 for bidirectional
  bool reverse = false;       // direction "reverse"
  int64_t hiddenSize = -1;    // -1: not given (taken from R)
  bool batchMajor = false;    // layout 1
  float clip = 0.0f;          // 0: no clipping
  bool linearBeforeReset = false;
  bool inputForget = false;
  // Per direction: RNN f; GRU f, g; LSTM f, g, h.
  std::vector<std::vector<kernels::RecurrentActivation>> activations;
};

// Throws kiln::Error naming the layer when an attribute is invalid.
RecurrentAttributes readRecurrentAttributes(const Layer& layer, kernels::RecurrentCell cell);

}  // namespace kiln
