#pragma once
// The reference for the CUDA reductions: the CPU kernel, except for int8 and int16, which the CPU
// gets wrong: kernels/cpu/reduce/reduce.cpp's foldRun, built by GCC 12.2 at -O3 (-O2 or
// -fno-tree-vectorize is right), loses elements of contiguous runs of 16 or more: int8
// ReduceSum/ReduceL1 (and Mean, LogSum built on the sum; sixteen 1..3 values sum to 17, not 31),
// int16 ReduceProd/ReduceL1. Those types compare with a plain loop over the input in the CPU's
// order, with the CPU's semantics (reduce_ops.h, checked against the CPU for every other type).
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/reduce/reduce.h>
#include <kernels/cuda/reduce/reduce_ops.h>

namespace kiln::test {

template <class T>
std::vector<T> naiveReduce(kernels::ReduceKind kind, const std::vector<T>& in, const std::vector<int64_t>& dims,
                           const std::vector<bool>& reduced) {
  using namespace kernels::cuda;
  using A = std::conditional_t<kIsCpuNarrowFloat<T>, float, T>;
  int64_t outputs = 1, count = 1;
  for (size_t d = 0; d < dims.size(); ++d) (reduced[d] ? count : outputs) *= dims[d];
  auto outputOf = [&](int64_t flat) {  // the output index of input element `flat`
    int64_t o = 0, scale = 1;
    for (size_t d = dims.size(); d-- > 0;) {
      const int64_t coordinate = flat % dims[d];
      flat /= dims[d];
      if (!reduced[d]) o += coordinate * scale, scale *= dims[d];
    }
    return o;
  };
  const int64_t n = elementCount(dims);
  std::vector<A> maxima(static_cast<size_t>(outputs), combineIdentity<Combine::kMax, A>());
  for (int64_t i = 0; i < n; ++i)
    maxima[size_t(outputOf(i))] = combine<Combine::kMax>(maxima[size_t(outputOf(i))], A(toDouble(in[size_t(i)])));
  std::vector<A> shift(static_cast<size_t>(outputs), A(0)), acc(static_cast<size_t>(outputs));
  const Combine c = combineOf(kind);
  for (int64_t o = 0; o < outputs; ++o) {
    if (kind == kernels::ReduceKind::kLogSumExp) shift[size_t(o)] = logSumExpShift(maxima[size_t(o)]);
    acc[size_t(o)] = c == Combine::kSum    ? combineIdentity<Combine::kSum, A>()
                     : c == Combine::kProd ? combineIdentity<Combine::kProd, A>()
                     : c == Combine::kMax  ? combineIdentity<Combine::kMax, A>()
                                           : combineIdentity<Combine::kMin, A>();
  }
  for (int64_t i = 0; i < n; ++i) {
    const size_t o = size_t(outputOf(i));
    const A x = reduceMap(mapOf(kind), A(toDouble(in[size_t(i)])), shift[o]);
    switch (c) {
      case Combine::kSum: acc[o] = combine<Combine::kSum>(acc[o], x); break;
      case Combine::kProd: acc[o] = combine<Combine::kProd>(acc[o], x); break;
      case Combine::kMax: acc[o] = combine<Combine::kMax>(acc[o], x); break;
      case Combine::kMin: acc[o] = combine<Combine::kMin>(acc[o], x); break;
    }
  }
  std::vector<T> out(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o)
    out[size_t(o)] = fromDouble<T>(double(reduceFinish(kind, acc[size_t(o)], count, shift[size_t(o)])));
  return out;
}

template <class T>
std::vector<T> referenceReduce(kernels::ReduceKind kind, const std::vector<T>& in, const std::vector<int64_t>& dims,
                               const std::vector<bool>& reduced) {
  if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t>) {
    return naiveReduce(kind, in, dims, reduced);
  } else {
    int64_t outputs = 1;
    for (size_t d = 0; d < dims.size(); ++d) outputs *= reduced[d] ? 1 : dims[d];
    std::vector<T> out(static_cast<size_t>(outputs));
    kernels::reduce<T>(kind, in.data(), out.data(), dims, reduced);
    return out;
  }
}

}  // namespace kiln::test
