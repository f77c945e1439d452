#pragma once
// Attribute logic of the reduction_softmax family shared by its schemas and CPU kernels.
#include <kiln/network.h>

#include <kernels/cpu/softmax/softmax.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln {

// Which dims a Reduce* layer reduces.
struct ReduceAxes {
  bool known = true;          // false while axes is an input whose value is not known yet
  bool noop = false;          // empty axes with noop_with_empty_axes=1: the output is the input
  std::vector<bool> reduced;  // one flag per input dim
};

// Axes come from input 1 for ReduceSum from opset 13 and the other Reduce* ops from opset 18, from
// the 'axes' attribute before. `axesValue` is input 1's value when known. Throws kiln::Error naming
// the layer for out-of-range or repeated axes.
ReduceAxes resolveReduceAxes(const Layer& layer, int64_t rank, const HostTensor* axesValue);

// A tensor seen as [outer, n, inner] around one axis (or around [axis, rank) flattened when
// `flattenTail`, as Softmax/LogSoftmax/Hardmax did before opset 13).
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit splitAtAxis(const std::vector<int64_t>& dims, int64_t axis, bool flattenTail = false);

// Softmax, LogSoftmax and Hardmax: default axis 1 and flattening before opset 13, -1 and one axis after.
int64_t softmaxAxisAttr(const Layer& layer);
bool softmaxFlattens(const Layer& layer);

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the 'reduction' attribute (mean when
// absent; the schema refuses other names) and ignore_index (none when absent).
kernels::LossReduction lossReductionOf(const Layer& layer);
std::optional<int64_t> lossIgnoreIndex(const Layer& layer);

}  // namespace kiln
