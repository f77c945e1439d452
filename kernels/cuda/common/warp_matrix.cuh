#pragma once
// The asynchronous-copy and ldmatrix instructions Kiln's tensor-core kernels share (flash
// attention, the 8-bit convolution): cp.async groups and four 8x8 matrices of 16-bit elements from
// shared memory to a warp's registers. Lane l gives the address of row l % 8 of matrix l / 8 and
// receives of matrix i, in r[i], the pair at row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 (8-bit
// data: row l / 4's bytes 4 (l % 4) .. + 3); with .trans, rows 2 (l % 4) and 2 (l % 4) + 1 of
// column l / 4. Under the host emulator (scripts/cuda_emulation) they run by their PTX layouts.
#include <cstdint>

namespace kiln::kernels::cuda {

#if defined(KILN_CUDA_EMULATION)
__device__ __forceinline__ void commitCopies() {}
template <int kPending>
__device__ __forceinline__ void waitCopies() {}
__device__ __forceinline__ void loadMatrices(uint32_t (&r)[4], const void* row) {
  kiln_emu::loadMatrices(r, static_cast<const uint16_t*>(row), false);
}
__device__ __forceinline__ void loadMatricesTransposed(uint32_t (&r)[4], const void* row) {
  kiln_emu::loadMatrices(r, static_cast<const uint16_t*>(row), true);
}
#else
__device__ __forceinline__ uint32_t sharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void commitCopies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void waitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
__device__ __forceinline__ void loadMatrices(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(sharedAddress(row))
               : "memory");
}
__device__ __forceinline__ void loadMatricesTransposed(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(sharedAddress(row))
               : "memory");
}
#endif

}  // namespace kiln::kernels::cuda
