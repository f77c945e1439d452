#pragma once
// The edits the tensor-parallel split makes to turn the whole network into rank r's
// (tensor_parallel_shards.cpp plans them, tensor_parallel_split.cpp applies them): constants cut to
// the rank's share, a reshape target's entry for the split axis, the kiln.AllReduce after a
// row-split product. Each edit addresses layers by index, so the plans of every block are made on
// the unchanged network and applied together; layers an edit drops are erased at the end.
#include <kiln/network.h>

#include "graph_utils.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln::tensor_parallel {

struct RankSplit {
  int worldSize = 1;
  int rank = 0;
};

using Edit = std::function<void(Network& network, std::set<size_t>& erased)>;

// Input `input` of layer `at` (a constant) becomes the rank's share along `axis`: of each of
// `groups` (extents side by side along the axis, summing to its dim), part `rank` of worldSize.
Edit cutConstantInput(size_t at, size_t input, size_t axis, std::vector<int64_t> groups, RankSplit split);
// Input `input` of layer `at` (integer constant: split sizes) divided by the world size.
Edit divideConstantInput(size_t at, size_t input, RankSplit split);
// Input `keep` and those after it of layer `at` are dropped (Gemm's C on ranks other than 0).
Edit dropInputsFrom(size_t at, size_t keep);
Edit setAttribute(size_t at, std::string key, Attribute value);

// A Reshape target: one constant, or the inputs of the Concat that builds it (dims read by Shape
// at run time before it); each piece with where it starts and, when constant, its values.
struct TargetPiece {
  std::string tensor;
  int64_t offset = 0;
  std::optional<std::vector<int64_t>> values;
};
std::optional<std::vector<TargetPiece>> targetPieces(const Network& network, const passes::GraphIndex& index,
                                                     const Layer& reshape);
// Entry `k` of the target when a constant piece holds it.
std::optional<int64_t> entryOf(const std::vector<TargetPiece>& pieces, int64_t k);
// Entry `k` of Reshape `at`'s target (one constant, or a constant piece of its Concat, which the
// rank gets a copy of) becomes `value`.
Edit setTargetEntry(const Network& network, const passes::GraphIndex& index, size_t at, int64_t k, int64_t value,
                    int rank);

// A kiln.AllReduce (sum over the ranks) completes row-split product `at`'s partial sum, after its
// bias Add `biasAdd` where it has one, which rank 0 alone keeps; the sum writes the tensor the
// product (or the Add) wrote, so its readers are unchanged.
Edit insertAllReduce(size_t at, std::optional<size_t> biasAdd, RankSplit split);

}  // namespace kiln::tensor_parallel
