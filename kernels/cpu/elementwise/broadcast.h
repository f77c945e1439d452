#pragma once
// Numpy-style broadcasting for elementwise kernels. A BroadcastPlan is computed once per call: it
// drops size-1 output dimensions, merges neighbouring dimensions that every input treats alike, and
// then walks the output as runs along the innermost merged dimension. Within a run each input
// either advances with the output (step 1) or repeats one element (step 0), and that choice is the
// same for every run, so kernels pick a typed inner loop once per call.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace kiln::kernels {

class BroadcastPlan {
 public:
  static constexpr int kMaxInputs = 3;

  // Every input's dims must broadcast to `outDims` (checked; throws std::invalid_argument).
  BroadcastPlan(const std::vector<int64_t>& outDims, const std::vector<std::vector<int64_t>>& inputDims);

  int inputCount() const { return inputCount_; }
  int64_t outputCount() const { return outputCount_; }
  // Length of the innermost merged dimension (the longest a run can be).
  int64_t innerSize() const { return innerSize_; }
  // True when input k advances along runs, false when it repeats one element.
  bool innerContiguous(int k) const { return innerStep_[size_t(k)] != 0; }
  // True when input k is one element repeated over the whole output.
  bool isUniform(int k) const { return uniform_[size_t(k)]; }
  // True when input k has an element for every output element, in the same order.
  bool matchesOutput(int k) const { return matchesOutput_[size_t(k)]; }

  // Calls fn(outOffset, const int64_t* inputOffsets, length) for each run covering output
  // elements [begin, end), in order.
  template <class Fn>
  void forEachRun(int64_t begin, int64_t end, Fn&& fn) const;

 private:
  using Offsets = std::array<int64_t, kMaxInputs>;

  int inputCount_ = 0;
  int64_t outputCount_ = 0;
  int64_t innerSize_ = 1;
  Offsets innerStep_{};
  std::array<bool, kMaxInputs> uniform_{};
  std::array<bool, kMaxInputs> matchesOutput_{};
  std::vector<int64_t> outerDims_;     // merged dimensions outside the innermost one
  std::vector<Offsets> outerStrides_;  // element strides of each input along outerDims_
};

template <class Fn>
void BroadcastPlan::forEachRun(int64_t begin, int64_t end, Fn&& fn) const {
  if (begin >= end) return;
  const size_t outerRank = outerDims_.size();
  constexpr size_t kStackRank = 16;
  int64_t stackCoords[kStackRank];
  std::vector<int64_t> heapCoords(outerRank > kStackRank ? outerRank : 0);
  int64_t* coords = outerRank > kStackRank ? heapCoords.data() : stackCoords;

  Offsets rowOffsets{};
  int64_t row = begin / innerSize_;
  int64_t column = begin % innerSize_;
  for (size_t d = outerRank; d-- > 0;) {
    coords[d] = row % outerDims_[d];
    row /= outerDims_[d];
    for (int k = 0; k < inputCount_; ++k) rowOffsets[size_t(k)] += coords[d] * outerStrides_[d][size_t(k)];
  }

  for (int64_t position = begin; position < end;) {
    const int64_t length = std::min(innerSize_ - column, end - position);
    Offsets runOffsets;
    for (int k = 0; k < inputCount_; ++k)
      runOffsets[size_t(k)] = rowOffsets[size_t(k)] + column * innerStep_[size_t(k)];
    fn(position, runOffsets.data(), length);
    position += length;
    column = 0;
    for (size_t d = outerRank; d-- > 0;) {  // next row: odometer over the outer dimensions
      for (int k = 0; k < inputCount_; ++k) rowOffsets[size_t(k)] += outerStrides_[d][size_t(k)];
      if (++coords[d] < outerDims_[d]) break;
      for (int k = 0; k < inputCount_; ++k) rowOffsets[size_t(k)] -= outerStrides_[d][size_t(k)] * outerDims_[d];
      coords[d] = 0;
    }
  }
}

}  // namespace kiln::kernels
