#pragma once
// The int32 sums of Kiln's int8 layers through oneDNN's int8 convolution and matmul (Debian's
// libdnnl): int8 or uint8 activations, int8 weights, int32 results and nothing else inside oneDNN
// (no scales, no post-ops), so the sums are the exact ones of the reference path
// (int8Convolution, integerMatMul) and Kiln's dequantization follows as there. Each shape is
// prepared once (primitive JIT-compiled) and constant weights re-laid out once, as in onednn_conv.h.
#include "../common/prepared_cache.h"
#include "../conv/conv.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace kiln::kernels {
namespace onednn {
class PackedWeights;
}

// Whether oneDNN's int8 kernels add up exactly on this CPU: with AVX-512 VNNI, whose vpdpbusd adds
// u8 x s8 products straight into int32. Without it they multiply through vpmaddubsw, whose int16
// sums of two products saturate (and int8 sources get their weights halved), so they can differ.
bool oneDnnInt8Exact();

// Whether sums of `length` products of 8-bit operands (|x - zero| <= 255, |w| <= 128, and the
// uint8 values oneDNN shifts int8 sources into) stay inside int32: always for real layers, but the
// reference path takes longer ones.
bool int8SumsFitInt32(int64_t length);

// The 8-bit types an activation comes in.
enum class Int8Source { kSigned, kUnsigned };

class OneDnnInt8Convolution {
 public:
  // Constant weights are re-laid out on the first run (new weight values need a new object).
  explicit OneDnnInt8Convolution(bool weightsAreConstant);
  ~OneDnnInt8Convolution();
  OneDnnInt8Convolution(const OneDnnInt8Convolution&) = delete;
  OneDnnInt8Convolution& operator=(const OneDnnInt8Convolution&) = delete;

  // The scratch bytes run() needs, or nullopt where it cannot run: oneDNN has no JIT kernel for the
  // convolution (its reference loops are slower than the BLAS path, so they do not count), the CPU
  // lacks VNNI or the sums could leave int32. Prepares the shape on first use.
  std::optional<uint64_t> prepare(const ConvShape& shape, Int8Source source, bool zeroPoint);

  // The same, planned without preparing anything (for a builder's workspace sizes).
  std::optional<uint64_t> workspaceBytes(const ConvShape& shape, Int8Source source, bool zeroPoint) const;

  // acc[n, m, p] = sum over m's window of (x - zero) * w, padding adding nothing (as if it held
  // `zero`); x [N, C, spatial...] of `source`'s type, w [M, C/group, kernel...], acc as Y. Throws
  // where prepare() says it cannot run. Safe to call from several threads at once.
  void run(const ConvShape& shape, const void* x, Int8Source source, int32_t zero, const int8_t* w, int32_t* acc,
           const std::function<void*(uint64_t)>& workspace);

 private:
  struct Prepared;
  Prepared* prepared(const ConvShape& shape, Int8Source source, bool zeroPoint);

  const bool weightsAreConstant_;
  std::unique_ptr<onednn::PackedWeights> packedWeights_;
  PreparedCache<Prepared> prepared_;
};

class OneDnnInt8MatMul {
 public:
  // Constant B is packed on the first run that multiplies by one B (new weights need a new object).
  explicit OneDnnInt8MatMul(bool weightsAreConstant);
  ~OneDnnInt8MatMul();
  OneDnnInt8MatMul(const OneDnnInt8MatMul&) = delete;
  OneDnnInt8MatMul& operator=(const OneDnnInt8MatMul&) = delete;

  // The scratch bytes run() needs for these `batch` products (offsets as there), or nullopt where
  // it cannot run (as OneDnnInt8Convolution::prepare).
  std::optional<uint64_t> prepare(int64_t batch, const int64_t* aOffsets, const int64_t* bOffsets, int64_t m, int64_t k,
                                  int64_t n, Int8Source source);

  // The same, planned without preparing anything.
  std::optional<uint64_t> workspaceBytes(int64_t batch, const int64_t* aOffsets, const int64_t* bOffsets, int64_t m,
                                         int64_t k, int64_t n, Int8Source source) const;

  // acc_i = (A_i - zero) B_i for `batch` products: A_i [m, k] at a + aOffsets[i] of `source`'s
  // type, B_i [k, n] at b + bOffsets[i], acc_i [m, n] at acc + i m n (batchedMatMul's layout).
  // Throws where prepare() says it cannot run. Safe to call from several threads at once.
  void run(int64_t batch, const int64_t* aOffsets, const int64_t* bOffsets, int64_t m, int64_t k, int64_t n,
           const void* a, Int8Source source, int32_t zero, const int8_t* b, int32_t* acc,
           const std::function<void*(uint64_t)>& workspace);

 private:
  struct Prepared;
  Prepared* prepared(int64_t rows, int64_t k, int64_t n, Int8Source source, bool packB);
  const std::vector<int32_t>& constantColumnSums(const int8_t* b, int64_t k, int64_t n);

  const bool weightsAreConstant_;
  std::unique_ptr<onednn::PackedWeights> packedWeights_;
  PreparedCache<Prepared> prepared_;
  std::mutex columnSumsMutex_;
  std::vector<int32_t> columnSums_;  // of constant B, for zero points
};

}  // namespace kiln::kernels
