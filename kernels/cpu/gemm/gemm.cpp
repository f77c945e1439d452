#include "gemm.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/common/single_threaded_blas.h>

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <type_traits>
#include <vector>

namespace kiln::kernels {
namespace {

// Products below this many multiply-adds run on one thread: waking the pool costs more.
constexpr int64_t kSingleThreadedWork = 64 * 64 * 64;

template <class T>
constexpr bool kIsBlasType = std::is_same_v<T, float> || std::is_same_v<T, double>;
template <class T>
constexpr bool kIsHalfType = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

bool fitsBlasInt(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
  return std::max({M, N, K, lda, ldb, ldc}) <= INT_MAX;
}

// C = beta * C for the degenerate K == 0 product (BLAS rejects zero leading dimensions).
template <class T>
void scaleRows(int64_t M, int64_t N, float beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      T& c = C[i * ldc + j];
      c = beta == 0.0f ? T(0) : fromFloat<T>(float(beta * toFloat(c)));
    }
}

// Row-by-row product for integer (and out-of-BLAS-range) cases: acc row += a(i,k) * B row k.
template <class T>
void gemmLoop(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda,
              const T* B, int64_t ldb, float beta, T* C, int64_t ldc) {
  std::vector<T> bRowMajor;
  if (transB) {  // make rows of op(B) contiguous so the inner loop vectorises
    bRowMajor.resize(static_cast<size_t>(K * N));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) bRowMajor[k * N + j] = B[j * ldb + k];
    B = bRowMajor.data();
    ldb = N;
  }
  const bool plain = alpha == 1.0f && (beta == 0.0f || beta == 1.0f);
  parallelFor(M, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, N * K)), [&](int64_t begin, int64_t end) {
    std::vector<T> acc(static_cast<size_t>(N));
    for (int64_t i = begin; i < end; ++i) {
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t k = 0; k < K; ++k) {
        const T a = transA ? A[k * lda + i] : A[i * lda + k];
        const T* bRow = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) acc[j] += a * bRow[j];
      }
      T* cRow = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) {
        if (plain)
          cRow[j] = beta == 0.0f ? acc[j] : T(cRow[j] + acc[j]);
        else
          cRow[j] = T(double(alpha) * double(acc[j]) + (beta == 0.0f ? 0.0 : double(beta) * double(cRow[j])));
      }
    }
  });
}

template <class T>
void blasGemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda,
              const T* B, int64_t ldb, float beta, T* C, int64_t ldc) {
  const auto ta = transA ? CblasTrans : CblasNoTrans, tb = transB ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
}

// One product split into row or column tiles over the pool (the longer side, tiles of at least 16
// rows or 64 columns), each tile one single-threaded BLAS call. Call under SingleThreadedBlas.
template <class T>
void tiledBlasGemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda,
                   const T* B, int64_t ldb, float beta, T* C, int64_t ldc) {
  const int64_t threads = M * N * K < kSingleThreadedWork ? 1 : cpuThreadCount();
  const bool byRows = M / 16 >= N / 64;
  const int64_t tiles = std::max<int64_t>(1, std::min(threads, byRows ? M / 16 : N / 64));
  if (tiles == 1) return blasGemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  const int64_t length = byRows ? M : N;
  const int64_t tile = ((length + tiles - 1) / tiles + 15) / 16 * 16;  // multiples of 16 keep SIMD tails out
  parallelFor((length + tile - 1) / tile, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t first = t * tile, count = std::min(tile, length - first);
      if (byRows)
        blasGemm(transA, transB, count, N, K, alpha, transA ? A + first : A + first * lda, lda, B, ldb, beta,
                 C + first * ldc, ldc);
      else
        blasGemm(transA, transB, M, count, K, alpha, A, lda, transB ? B + first * ldb : B + first, ldb, beta, C + first,
                 ldc);
    }
  });
}

template <class T>
void widen(const T* src, int64_t count, float* dst) {
  for (int64_t i = 0; i < count; ++i) dst[i] = toFloat(src[i]);
}
template <class T>
void narrow(const float* src, int64_t count, T* dst) {
  for (int64_t i = 0; i < count; ++i) dst[i] = fromFloat<T>(src[i]);
}

}  // namespace

template <class T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, float beta, T* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return scaleRows(M, N, beta, C, ldc);
  if constexpr (kIsBlasType<T>) {
    if (fitsBlasInt(M, N, K, lda, ldb, ldc)) {
      SingleThreadedBlas singleThreaded;
      return tiledBlasGemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
    gemmLoop(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else if constexpr (kIsHalfType<T>) {
    const int64_t aRows = transA ? K : M, bRows = transB ? N : K;
    std::vector<float> a(size_t((aRows - 1) * lda + (transA ? M : K)));
    std::vector<float> b(size_t((bRows - 1) * ldb + (transB ? K : N)));
    std::vector<float> c(static_cast<size_t>((M - 1) * ldc + N));
    widen(A, int64_t(a.size()), a.data());
    widen(B, int64_t(b.size()), b.data());
    if (beta != 0.0f) widen(C, int64_t(c.size()), c.data());
    gemm<float>(transA, transB, M, N, K, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    for (int64_t i = 0; i < M; ++i) narrow(c.data() + i * ldc, N, C + i * ldc);
  } else {
    gemmLoop(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

template <class T>
void batchedMatMul(const T* A, const T* B, T* C, int64_t batch, const int64_t* aOffsets, const int64_t* bOffsets,
                   int64_t M, int64_t N, int64_t K, bool transA, bool transB) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  const int64_t lda = transA ? M : K, ldb = transB ? K : N;
  if constexpr (kIsHalfType<T>) {
    // Widen every operand once (broadcast operands are shared), multiply in float, narrow once.
    const int64_t aExtent = *std::max_element(aOffsets, aOffsets + batch) + M * K;
    const int64_t bExtent = *std::max_element(bOffsets, bOffsets + batch) + K * N;
    std::vector<float> a(static_cast<size_t>(aExtent)), b(static_cast<size_t>(bExtent)),
        c(static_cast<size_t>(batch * M * N));
    widen(A, aExtent, a.data());
    widen(B, bExtent, b.data());
    batchedMatMul<float>(a.data(), b.data(), c.data(), batch, aOffsets, bOffsets, M, N, K, transA, transB);
    narrow(c.data(), batch * M * N, C);
    return;
  } else {
    bool foldsIntoM = !transA && batch > 1;
    for (int64_t i = 0; foldsIntoM && i < batch; ++i)
      foldsIntoM = bOffsets[i] == bOffsets[0] && aOffsets[i] == aOffsets[0] + i * M * K;
    if (foldsIntoM || batch == 1) {
      const int64_t rows = foldsIntoM ? batch * M : M;
      return gemm<T>(transA, transB, rows, N, K, 1.0f, A + aOffsets[0], lda, B + bOffsets[0], ldb, 0.0f, C, N);
    }
    const int64_t work = M * N * K;
    if (batch < cpuThreadCount() && work >= kSingleThreadedWork) {  // few big products: tile each one
      for (int64_t i = 0; i < batch; ++i)
        gemm<T>(transA, transB, M, N, K, 1.0f, A + aOffsets[i], lda, B + bOffsets[i], ldb, 0.0f, C + i * M * N, N);
      return;
    }
    std::optional<SingleThreadedBlas> singleThreaded;
    if constexpr (kIsBlasType<T>) singleThreaded.emplace();
    parallelFor(
        batch, std::max<int64_t>(1, kSingleThreadedWork / std::max<int64_t>(1, work)), [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            gemm<T>(transA, transB, M, N, K, 1.0f, A + aOffsets[i], lda, B + bOffsets[i], ldb, 0.0f, C + i * M * N, N);
        });
  }
}

#define KILN_INSTANTIATE_GEMM(T)                                                                                       \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, float, const T*, int64_t, const T*, int64_t, float, T*, \
                        int64_t);                                                                                      \
  template void batchedMatMul<T>(const T*, const T*, T*, int64_t, const int64_t*, const int64_t*, int64_t, int64_t,    \
                                 int64_t, bool, bool);
KILN_INSTANTIATE_GEMM(float)
KILN_INSTANTIATE_GEMM(double)
KILN_INSTANTIATE_GEMM(Float16)
KILN_INSTANTIATE_GEMM(BFloat16)
KILN_INSTANTIATE_GEMM(int32_t)
KILN_INSTANTIATE_GEMM(int64_t)
KILN_INSTANTIATE_GEMM(uint32_t)
KILN_INSTANTIATE_GEMM(uint64_t)
#undef KILN_INSTANTIATE_GEMM

}  // namespace kiln::kernels
