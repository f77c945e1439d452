#pragma once
// Pieces the CPU kernels of kiln.QuantizedConv / kiln.QuantizedMatMul share: int8 in quantized.cpp,
// fp8 and fp4 in quantized_small_float.cpp (semantics: engine_core/src/ops/quantized.cpp).
#include "../cpu_kernel.h"

#include <vector>

namespace kiln {

// Input i, a float32 scalar scale.
float scalarScale(const KernelContext& ctx, size_t i, const char* what);

// Where the layer writes its float32 results: the output itself, or a buffer that finish()
// quantizes into it (a layer with y_scale: int8, uint8 or fp8 e4m3 as y_zero_point is).
class FloatResult {
 public:
  explicit FloatResult(KernelContext& ctx);
  float* data() { return buffer_.empty() ? out_.data<float>() : buffer_.data(); }
  const HostTensor& output() const { return out_; }
  void finish();
  // A matmul's epilogue (bias C[n] of `columns`, activation, residual), then finish().
  void finishMatMul(int64_t columns);

 private:
  KernelContext& ctx_;
  HostTensor& out_;
  std::vector<float> buffer_;
};

// The fp8 and fp4 layers' kernels, called by the layers' one kernel for their precision.
void smallFloatConv(KernelContext& ctx);
void smallFloatMatMul(KernelContext& ctx);

}  // namespace kiln
