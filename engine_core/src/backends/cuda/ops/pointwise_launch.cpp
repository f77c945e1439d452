#include "pointwise_launch.h"

#include <kiln/error.h>
#include <kiln/shape.h>

#include <limits>

namespace kiln::cuda {
namespace {

int bytesOf(DataType t) { return t == DataType::kFloat32 ? 4 : t == DataType::kBool ? 1 : 2; }

// Element strides of each logical axis as the tensor is stored.
std::vector<int64_t> storedStrides(const std::vector<int64_t>& d, bool channelsLast) {
  if (channelsLast) return {d[2] * d[3] * d[1], 1, d[3] * d[1], d[1]};
  std::vector<int64_t> s(d.size(), 1);
  for (size_t a = d.size(); a-- > 1;) s[a - 1] = s[a] * d[a];
  return s;
}

bool aligned(const void* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % uint64_t(bytes) == 0; }

}  // namespace

PointwiseLaunch planPointwiseLaunch(const std::vector<PointwiseOperand>& inputs, const PointwiseOperand& output,
                                    int pack, const std::string& who) {
  const size_t R = output.dims.size();
  const bool outChannelsLast = output.channelsLast && R == 4;
  std::vector<size_t> order(R);  // iteration axis -> logical axis
  for (size_t a = 0; a < R; ++a) order[a] = a;
  if (outChannelsLast) order = {0, 2, 3, 1};
  PointwiseLaunch launch;
  PointwiseLaunchParams& p = launch.params;
  p.output = const_cast<void*>(output.data);
  p.count = 1;
  for (size_t a = 0; a < R; ++a) {
    p.dims.push_back(output.dims[order[a]]);
    p.count *= output.dims[a];
  }
  const std::vector<int64_t> contiguous = storedStrides(p.dims, false);
  for (const PointwiseOperand& in : inputs) {
    const size_t r = in.dims.size();
    if (r > R)
      throw Error(ErrorCode::kInvalidArgument, who + ": an input of dims " + dimsToString(in.dims) +
                                                   " has a higher rank than its output " + dimsToString(output.dims));
    const std::vector<int64_t> own = storedStrides(in.dims, in.channelsLast && r == 4);
    std::vector<int64_t> logical(R, 0);
    for (size_t a = 0; a < r; ++a) {
      const size_t A = R - r + a;
      if (in.dims[a] == output.dims[A])
        logical[A] = in.dims[a] == 1 ? 0 : own[a];
      else if (in.dims[a] != 1)
        throw Error(ErrorCode::kInvalidArgument, who + ": an input of dims " + dimsToString(in.dims) +
                                                     " does not broadcast to its output " + dimsToString(output.dims));
    }
    std::vector<int64_t> s(R);
    for (size_t a = 0; a < R; ++a) s[a] = logical[order[a]];
    p.strides.push_back(s);
    p.inputs.push_back(in.data);
  }

  // The packed kernel: every input dense, scalar or per channel (varies along the last axis, and
  // perhaps the first), the pointers aligned to a pack.
  bool packed = aligned(output.data, int64_t(pack) * bytesOf(output.storage));
  bool perChannel = false;
  for (size_t k = 0; k < inputs.size() && packed; ++k) {
    const std::vector<int64_t>& s = p.strides[k];
    bool scalar = true, dense = true, channel = R >= 2 && s[R - 1] == 1;
    for (size_t a = 0; a < R; ++a) {
      if (p.dims[a] == 1) continue;
      scalar = scalar && s[a] == 0;
      dense = dense && s[a] == contiguous[a];
      if (a > 0 && a + 1 < R) channel = channel && s[a] == 0;
    }
    if (scalar) {
      p.modes.push_back(kPointwiseScalar);
      p.batchStrides.push_back(0);
      continue;
    }
    if (dense)
      p.modes.push_back(kPointwiseDense);
    else if (channel)
      p.modes.push_back(kPointwisePerChannel);
    else
      packed = false;
    p.batchStrides.push_back(channel && p.dims[0] > 1 ? s[0] : 0);
    perChannel = perChannel || (!dense && channel);
    packed = packed && aligned(inputs[k].data, int64_t(pack) * bytesOf(inputs[k].storage));
  }
  if (packed && perChannel) {
    p.channels = p.dims[R - 1];
    p.imageSize = p.count / p.dims[0];
    packed = p.channels % pack == 0;
  }
  if (packed) {
    launch.kernel = PointwiseKernelChoice::kPacked;
    launch.threads = p.count / pack + p.count % pack;
    return launch;
  }
  p.modes.clear();
  p.batchStrides.clear();
  p.channels = p.imageSize = 0;

  // The general kernel: size-1 axes dropped, neighbours merged where every operand (the output
  // is contiguous) steps across them as one axis.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(inputs.size());
  for (size_t a = 0; a < R; ++a) {
    if (p.dims[a] == 1) continue;
    bool merges = !dims.empty();
    for (size_t k = 0; k < inputs.size() && merges; ++k) merges = strides[k].back() == p.strides[k][a] * p.dims[a];
    if (merges) {
      dims.back() *= p.dims[a];
      for (size_t k = 0; k < inputs.size(); ++k) strides[k].back() = p.strides[k][a];
      continue;
    }
    dims.push_back(p.dims[a]);
    for (size_t k = 0; k < inputs.size(); ++k) strides[k].push_back(p.strides[k][a]);
  }
  if (dims.size() > kPointwiseMaxRank)
    throw Error(ErrorCode::kInvalidArgument, who + ": its output " + dimsToString(output.dims) + " has more than " +
                                                 std::to_string(kPointwiseMaxRank) +
                                                 " axes that broadcast differently");
  p.dims = dims;
  p.strides = strides;
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  bool narrow = p.count <= kLimit;
  for (const auto& s : strides) {
    int64_t last = 0;
    for (size_t a = 0; a < dims.size(); ++a) last += (dims[a] - 1) * s[a];
    narrow = narrow && last <= kLimit;
  }
  launch.kernel = narrow ? PointwiseKernelChoice::kGeneral32 : PointwiseKernelChoice::kGeneral64;
  launch.threads = p.count;
  return launch;
}

}  // namespace kiln::cuda
