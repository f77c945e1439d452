#pragma once
// The asynchronous-copy and ldmatrix instructions Kiln's tensor-core kernels share (flash
// attention, the 8-bit convolution): cp.async groups, four 8x8 matrices of 16-bit elements from
// shared memory to a warp's registers. Lane l gives the address of row l % 8 of matrix l / 8 and
// receives of matrix i, in r[i], the pair at row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 (8-bit
// data: row l / 4's bytes 4 (l % 4) .. + 3); with .trans, rows 2 (l % 4) and 2 (l % 4) + 1 of
// column l / 4; mma.sync m16n8k16 on fp16 / bf16 and m16n8k8 on TF32, with fp32 sums. Under the host emulator
// (scripts/cuda_emulation) they run by their PTX layouts.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

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
template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  kiln_emu::mma16816(c, a, b0, b1, !std::is_same_v<T, __half>);
}
__device__ __forceinline__ uint32_t tf32Of(float x) { return kiln_emu::tf32Of(x); }
__device__ __forceinline__ void mma1688Tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  kiln_emu::mma1688Tf32(c, a, b0, b1);
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
// c (16x8, fp32) += a (16x16, row-major) · b (16x8, column-major), T __half or __nv_bfloat16. Lane
// l = 4g + t holds of a the pairs (row g, k 2t, 2t+1), (g + 8, 2t..), (g, 2t + 8..), (g + 8, 2t + 8..);
// of b (k 2t, 2t+1 | 2t + 8, 2t + 9; column g); of c rows g, g + 8 at columns 2t, 2t + 1.
template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
// x rounded to TF32 (10 mantissa bits, to nearest, ties away from zero), as mma's operand bits.
__device__ __forceinline__ uint32_t tf32Of(float x) {
  uint32_t bits = __float_as_uint(x);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(x));
#endif
  return bits;
}
// c (16x8, fp32) += a (16x8, row-major, TF32) · b (8x8, column-major, TF32). Lane l = 4g + t holds
// of a (row g, k t), (g + 8, t), (g, t + 4), (g + 8, t + 4); of b (k t, column g) and (k t + 4,
// column g); of c rows g, g + 8 at columns 2t, 2t + 1.
__device__ __forceinline__ void mma1688Tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
#endif

}  // namespace kiln::kernels::cuda
