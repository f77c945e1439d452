#pragma once
// The reference for the CUDA reductions: the CPU kernel.
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/reduce/reduce.h>

namespace kiln::test {

template <class T>
std::vector<T> referenceReduce(kernels::ReduceKind kind, const std::vector<T>& in, const std::vector<int64_t>& dims,
                               const std::vector<bool>& reduced) {
  int64_t outputs = 1;
  for (size_t d = 0; d < dims.size(); ++d) outputs *= reduced[d] ? 1 : dims[d];
  std::vector<T> out(static_cast<size_t>(outputs));
  kernels::reduce<T>(kind, in.data(), out.data(), dims, reduced);
  return out;
}

}  // namespace kiln::test
