#pragma once
// Kiln's collective layers (domain "kiln"): the communication a model split over several GPUs
// needs, one layer per collective. Every rank's engine holds the same collective layers, and
// each reads and writes tensors of its own rank. Attributes:
//   world_size  the number of ranks the model was split for (required, >= 1); the execution
//               context's communicator must have exactly that many ranks
//   reduction   "sum" (default), "max", "min" or "prod"     AllReduce, ReduceScatter, Reduce
//   axis        the dim gathered, scattered or exchanged    AllGather, ReduceScatter, AllToAll, Gather,
//                                                           Scatter (default 0)
//   root        the rank that sends or receives             Broadcast, Reduce, Gather, Scatter (default 0)
// Shapes (input X on every rank has the same shape; W = world_size):
//   AllReduce      Y = X's shape, reduced over ranks
//   AllGather      Y[axis] = W · X[axis], the ranks' X concatenated along axis in rank order
//   Gather         as AllGather on the root; zeros on the other ranks
//   ReduceScatter  Y[axis] = X[axis] / W, rank r's slice r of the reduction (X[axis] divisible by W)
//   Scatter        Y[axis] = X[axis] / W, rank r's slice r of the root's X (the others' X is not
//                  read, but has the root's shape)
//   Broadcast      Y = the root's X
//   Reduce         Y = the reduction on the root, X itself on the other ranks
//   AllToAll       Y = X's shape; X split along axis into W slices, slice j sent to rank j, the
//                  slices received concatenated along axis in rank order (X[axis] divisible by W)
// The semantics are the communicator's (kiln/communicator.h); the CPU kernels are in
// backends/cpu/ops/collective.cpp.
#include <kiln/network.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::collective {

inline constexpr const char* kAllReduce = "AllReduce";
inline constexpr const char* kAllGather = "AllGather";
inline constexpr const char* kReduceScatter = "ReduceScatter";
inline constexpr const char* kBroadcast = "Broadcast";
inline constexpr const char* kReduce = "Reduce";
inline constexpr const char* kAllToAll = "AllToAll";
inline constexpr const char* kGather = "Gather";
inline constexpr const char* kScatter = "Scatter";

inline constexpr const char* kWorldSize = "world_size";
inline constexpr const char* kReduction = "reduction";
inline constexpr const char* kAxis = "axis";
inline constexpr const char* kRoot = "root";

// Whether the layer is one of the collectives above: it exchanges data with other ranks, so it
// must neither be folded nor evaluated on the host in the shape phase.
bool isCollective(const Layer& layer);
// Its world_size attribute (the caller checked isCollective; the schema checked the value).
int64_t worldSizeOf(const Layer& layer);
// Throws kiln::Error(kInvalidModel) naming two collective layers of `network` whose world_size
// differs: one engine runs on one group, so all of its collectives were split for one size.
void checkWorldSizes(const Network& network);

// A tensor split or joined along the layer's axis, viewed as [outer, rows, inner] (inner in
// elements): its data is `ranks` contiguous blocks only where outer is 1, else the CPU and CUDA steps
// lay it out in blocks first.
struct AxisView {
  int64_t outer = 1, rows = 1, inner = 1;
};
// Throws kiln::Error naming the layer: kRuntimeError for a rank-0 tensor, kInvalidModel for an axis
// outside `dims`.
AxisView axisViewOf(const Layer& layer, const std::vector<int64_t>& dims);
// The rows along the axis (`axisRows` of them) each of `ranks` blocks holds; throws
// kiln::Error(kRuntimeError) naming the layer where `ranks` does not divide them.
int64_t rowsPerRank(const Layer& layer, int64_t axisRows, int64_t ranks);

}  // namespace kiln::collective
