#pragma once
// Matching of the epilogue shared by the Conv and MatMul fusions: after the anchor's output, an
// optional residual Add, an activation, and (if none came before) a residual Add after it.
#include "graph_utils.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln::passes {

struct EpilogueMatch {
  std::vector<size_t> layers;  // the epilogue's layers, in data-flow order
  std::string output;          // the tensor the fused layer writes
  std::string activation;      // fused activation name ("" = none), see ops/fused.cpp
  float alpha = 0, beta = 0;
  std::string residual;        // "" = none
  bool residualBeforeActivation = true;
};

// Extends `match` (whose `output` is the tensor reached so far) with a residual Add, an activation
// and a later residual Add, each only when the current tensor is read by that layer alone.
void matchEpilogueTail(const Network& network, const GraphIndex& index, EpilogueMatch& match);

// When `tensor`'s sole reader is an Add of a constant accepted by `acceptBias`, that Add's index
// and the constant's name.
struct BiasAdd {
  size_t layer;
  std::string constant;
};
std::optional<BiasAdd> matchBiasAdd(const Network& network, const GraphIndex& index, const std::string& tensor,
                                    const std::function<bool(const HostTensor&)>& acceptBias);

// Writes the epilogue attributes of `match` into the fused layer.
void setEpilogueAttributes(Layer& fused, const EpilogueMatch& match);

}  // namespace kiln::passes
