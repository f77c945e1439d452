#pragma once
// Float32 matrix products through oneDNN's matmul (brgemm JIT kernels on AVX-512 / AVX2): Y[m, n] =
// epilogue(A[m, k] B[k, n] + bias[n]), A and Y row-major, B row-major or transposed. Bias,
// activation and residual run inside oneDNN as post-ops; constant B is packed once. Each shape is
// prepared once (primitive JIT-compiled) and reused.
#include "../common/prepared_cache.h"
#include "../fused/epilogue.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::kernels {
namespace onednn {
class PackedWeights;
}

struct MatMulShape {
  int64_t m = 1, k = 1, n = 1;
  bool transB = false;  // B stored as [n, k]

  bool operator==(const MatMulShape&) const = default;
};

// Whether oneDNN can compute this product (sizes within its int limits).
bool oneDnnMatMulApplies(const MatMulShape& shape);

class OneDnnMatMul {
 public:
  // Constant B is packed on the first run, once per layout the shapes ask for (new weight values
  // need a new object); other B are read as they are.
  explicit OneDnnMatMul(bool weightsAreConstant);
  ~OneDnnMatMul();
  OneDnnMatMul(const OneDnnMatMul&) = delete;
  OneDnnMatMul& operator=(const OneDnnMatMul&) = delete;

  // Whether oneDNN has a matmul for this shape (plans one; the first check is only on sizes).
  static bool supports(const MatMulShape& shape);

  // Scratch bytes run() needs: oneDNN's scratchpad (0 when oneDNN has no kernel for the shape:
  // run() then throws).
  uint64_t workspaceBytes(const MatMulShape& shape, const Epilogue& epilogue, bool hasBias) const;

  // Y = epilogue(A B + bias); bias (n values) may be null; the epilogue's own bias is ignored.
  // `workspace(bytes)` returns scratch memory of that size. Safe to call from several threads at once.
  void run(const MatMulShape& shape, const float* a, const float* b, const float* bias, const Epilogue& epilogue,
           float* y, const std::function<void*(uint64_t)>& workspace);

 private:
  struct Prepared;
  Prepared& prepared(const MatMulShape& shape, const Epilogue& epilogue, bool hasBias);

  const bool weightsAreConstant_;
  std::unique_ptr<onednn::PackedWeights> packedWeights_;
  PreparedCache<Prepared> prepared_;
};

}  // namespace kiln::kernels
