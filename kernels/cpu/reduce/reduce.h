#pragma once
// Reductions over any set of axes, ArgMax/ArgMin, TopK and CumSum on dense row-major tensors.
#include <cstdint>
#include <vector>

namespace kiln::kernels {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// out[kept dims] = reduction of in over the dims where reduced[d] is true (out has the kept dims in
// order; keepdims only changes the shape the caller reports). An empty reduction gives the
// operation's identity (0 for sums, 1 for products, lowest/highest for max/min). float16 and
// bfloat16 accumulate in float, integers in their own type (wrapping like ONNX Runtime).
template <class T>
void reduce(ReduceKind kind, const T* in, T* out, const std::vector<int64_t>& dims, const std::vector<bool>& reduced);

// Index of the largest (or smallest) element along the middle axis of [outer, n, inner]; ties go
// to the first index unless selectLast.
template <class T>
void argExtreme(const T* in, int64_t* out, int64_t outer, int64_t n, int64_t inner, bool largest, bool selectLast);

// The k largest (or smallest) elements along the middle axis of [outer, n, inner], ordered by value
// with ties broken by the lower index; values and indices are [outer, k, inner].
template <class T>
void topK(const T* in, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner, int64_t k,
          bool largest);

// Running sums along the middle axis of [outer, n, inner]; `exclusive` leaves out the element
// itself, `reverse` sums from the end.
template <class T>
void cumulativeSum(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse);

}  // namespace kiln::kernels
