#pragma once
// The sharding rules of the tensor-parallel split (tensor_parallel_split.cpp). Given the
// column-split products of one transformer block (Q, K, V or a packed QKV; an MLP's first layer),
// `planBlock` follows the rank's slices through every layer that reads them (which axis of which
// tensor holds 1/N of its values), down to the row-split products whose partial sums a
// kiln.AllReduce completes. Planning only reads the network; the plan's edits make rank r's graph
// (weights, biases, reshape targets and split sizes cut to its share, the AllReduce inserted).
#include <kiln/network.h>

#include "graph_utils.h"
#include "tensor_parallel_edits.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace kiln::tensor_parallel {

struct BlockPlan {
  std::vector<size_t> columnProducts, rowProducts;
  std::set<size_t> layers;  // every layer the block's split reaches, products included
  bool nonlinear = false;   // an activation among them (what makes two products an MLP)
  std::string failure;      // why the block cannot be split; empty when it can
  // Where the failure was a binary op whose other operand is a whole tensor: that operand (a
  // gated MLP's second product, SwiGLU's up projection, may be behind it).
  std::string wholeOperand;
  // The first size the world size does not divide ("the MLP width 254"), if any.
  std::string indivisible;
  std::vector<Edit> edits;
};

// Whether `layer` multiplies an activation by constant weights: MatMul(A, B) with B a constant
// matrix, or Gemm(A, B[, C]) with B constant and transA 0.
bool isLinear(const Network& network, const Layer& layer);

// `order` is network.topologicalOrder(); `columnProducts` are linear layers (isLinear) that read
// whole tensors.
BlockPlan planBlock(const Network& network, const passes::GraphIndex& index, const std::vector<size_t>& order,
                    const std::vector<size_t>& columnProducts, RankSplit split);

// Applies the plans' edits, erases the layers they drop and sorts the layers.
void applyPlans(Network& network, const std::vector<BlockPlan>& plans);

}  // namespace kiln::tensor_parallel
