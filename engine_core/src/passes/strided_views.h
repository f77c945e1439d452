#pragma once
// Which elements of a base tensor a chain of layout-only layers (Reshape,
// Flatten, Squeeze, Unsqueeze, Identity, Transpose, Split, Gather of one
// constant index) selects, as one strided view: dims, element strides and an
// offset into the base. Passes use it to see that a tensor several copies away
// is only a re-indexed slice of another, so a kernel can read it in place.
#include "graph_utils.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::passes {

// Each dim of the view is a run of (size, stride) pieces, outermost first: a
// Reshape that merges dims whose strides do not nest (heads of a sequence-first
// tensor folded into its batch) keeps them as pieces, and a later Reshape or
// Transpose can take them apart again.
struct StridedView {
  struct Piece {
    int64_t size, stride;
    bool operator==(const Piece&) const = default;
  };
  std::vector<std::vector<Piece>> dims;
  int64_t offset = 0;

  // The view of a dense tensor: strides from the last dim, offset 0.
  static StridedView dense(const std::vector<int64_t>& dims);
  // The dense tensor `dims` seen through a permutation: dim i of the view is
  // dim perm[i] of it.
  static StridedView permuted(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm);
  std::vector<int64_t> sizes() const;
  // One stride per dim, when each dim's pieces nest (else nullopt).
  std::optional<std::vector<int64_t>> strides() const;
};

// The view after `layer` when its input 0 holds `in`, for its output `output`;
// nullopt when the layer is not layout-only or its result is not a strided view
// of the same base.
std::optional<StridedView> viewThrough(const Network& network, const Layer& layer, const StridedView& in,
                                       size_t output = 0);

// Walks back from `tensor` through layout-only layers to the first tensor that
// is not made by one (the base): the layers in the order they run, each with
// the output the chain goes on from.
struct ViewChain {
  struct Step {
    size_t layer, output;
  };
  std::string base;
  std::vector<Step> steps;
};
ViewChain viewChainTo(const GraphIndex& index, const std::string& tensor);

// The chain's end as a view of its base, whose elements are laid out as `base`;
// nullopt when a step does not keep a strided view.
std::optional<StridedView> viewAlong(const Network& network, const GraphIndex& index, const ViewChain& chain,
                                     const StridedView& base);

}  // namespace kiln::passes
