#pragma once
// Dense matrix products on row-major buffers. float and double go to OpenBLAS; float16/bfloat16 are
// widened to float around an sgemm; integer types use a cache-friendly loop (wrapping arithmetic,
// like ONNX Runtime).
#include <cstdint>

namespace kiln::kernels {

// C[M,N] = alpha * op(A) * op(B) + beta * C, with op(X) = X or X^T; lda/ldb/ldc are row strides.
template <class T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, float beta, T* C, int64_t ldc);

// `batch` independent products C_b[M,N] = A_b[M,K] * B_b[K,N] (A_b transposed when transA, stored
// [K,M]; likewise B_b). A_b starts at A + aOffsets[b], B_b at B + bOffsets[b]; C_b at C + b*M*N.
// Offsets express broadcasting (a repeated offset reuses an operand). When every B_b is the same
// and the A_b follow each other, the batch folds into one big product.
template <class T>
void batchedMatMul(const T* A, const T* B, T* C, int64_t batch, const int64_t* aOffsets, const int64_t* bOffsets,
                   int64_t M, int64_t N, int64_t K, bool transA = false, bool transB = false);

}  // namespace kiln::kernels
