#pragma once
// Matching of the epilogue shared by the Conv and MatMul fusions: after the anchor's output, an
// optional residual Add, an activation, and (if none came before) a residual Add after it.
#include "graph_utils.h"
#include "pass.h"

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

// The driver shared by the Conv and MatMul epilogue fusions. A subclass recognises an anchor and
// its epilogue and sets the fused layer's inputs; the driver applies the guards (nothing claimed
// twice in a sweep, backend support), names the fused op, and rewrites.
class EpilogueFusionPass : public Pass {
 protected:
  struct Candidate {
    EpilogueMatch match;
    Layer fused;                        // a copy of the anchor with the fused layer's inputs
    std::optional<HostTensor> newBias;  // a bias folded at build time, added as input 2
  };
  explicit EpilogueFusionPass(std::string fusedOpType) : fusedOpType_(std::move(fusedOpType)) {}
  // The anchor's fusion, or nullopt when `anchor` is not a layer this pass fuses.
  virtual std::optional<Candidate> match(const Network& network, const GraphIndex& index,
                                         const Layer& anchor) const = 0;

 private:
  void apply(Network& network, PassContext& context) final;
  size_t sweep(Network& network, PassContext& context) const;

  std::string fusedOpType_;
};

}  // namespace kiln::passes
