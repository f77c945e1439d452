#pragma once
// ArgMax/ArgMin as a parallel fold with the CPU kernel's sequential result: the CPU starts from
// element 0 and replaces the best when an element is strictly better (or equal, with
// select_last_index). So NaN at index 0 wins (nothing compares better than it), NaN elsewhere is
// never taken, and otherwise the answer is the first (or last) index of the extreme among the
// non-NaN values. Candidates are (value, index) pairs; index -1 is the empty fold. Shared by the
// kernels and the host tests.
#include "kernels/cuda/common/host_device.h"

#include <cstdint>

namespace kiln::kernels::cuda {

template <class A>
struct ArgCandidate {
  A value;
  int64_t index;
};

struct ArgOrder {
  bool largest;
  bool selectLast;

  template <class A>
  KILN_HD ArgCandidate<A> operator()(ArgCandidate<A> a, ArgCandidate<A> b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool aBetter = largest ? a.value > b.value : a.value < b.value;
    const bool bBetter = largest ? b.value > a.value : b.value < a.value;
    if (aBetter) return a;
    if (bBetter) return b;
    return (selectLast ? a.index > b.index : a.index < b.index) ? a : b;
  }
};

// Element i's candidate: none for NaN.
template <class A>
KILN_HD ArgCandidate<A> argCandidate(A value, int64_t i) {
  return {value, value == value ? i : int64_t(-1)};
}

// The answer from the fold and the line's first element.
template <class A>
KILN_HD int64_t argResult(const ArgCandidate<A>& folded, A first) {
  return first != first ? 0 : folded.index;
}

}  // namespace kiln::kernels::cuda
