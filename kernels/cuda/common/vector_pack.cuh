#pragma once
// N elements of T moved as one aligned vector access (16 bytes and more are whole ld/st.v4), the
// unit of the kernels that load and store several neighbouring elements a thread.
#include <cstddef>
#include <cstdint>

namespace kiln::kernels::cuda {

template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// The pack of N elements starting at element `element` of `p` (aligned to the pack's size).
template <class T, int N>
__device__ __forceinline__ Pack<T, N> loadPack(const void* p, size_t element) {
  return *reinterpret_cast<const Pack<T, N>*>(static_cast<const T*>(p) + element);
}

inline bool alignedTo(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace kiln::kernels::cuda
