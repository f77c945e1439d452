#pragma once
// Float32 convolutions through oneDNN (Debian's libdnnl): its JIT kernels run in blocked layouts
// (nChw16c on AVX-512, nChw8c on AVX2) chosen for the CPU at run time. The NC(D)HW activations are
// re-laid out on the way in and out; bias, activation and residual run inside oneDNN as post-ops.
// Each shape is prepared once (primitive JIT-compiled, constant weights re-laid out) and reused.
#include "../common/prepared_cache.h"
#include "conv.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::kernels {
namespace onednn {
class PackedWeights;
}

// Which of a convolution's activations are channels-last (N, spatial..., C in memory) instead of
// NC(D)HW: the engine keeps them so between two oneDNN convolutions, whose kernels use that layout.
struct ActivationLayouts {
  bool xChannelsLast = false, residualChannelsLast = false, yChannelsLast = false;
};

// Whether oneDNN can compute this convolution (spatial rank 1-3, sizes within its int limits).
bool oneDnnConvApplies(const ConvShape& shape);

class OneDnnConvolution {
 public:
  // Constant weights are re-laid out on the first run, once per layout the shapes ask for (new
  // weight values need a new object); others on every run.
  explicit OneDnnConvolution(bool weightsAreConstant, ActivationLayouts layouts = {});
  ~OneDnnConvolution();
  OneDnnConvolution(const OneDnnConvolution&) = delete;
  OneDnnConvolution& operator=(const OneDnnConvolution&) = delete;

  // Whether oneDNN has a convolution for this shape (plans one; the first check is only on sizes).
  static bool supports(const ConvShape& shape);

  // Scratch bytes run() needs: the re-laid-out copies of X and Y, of W when it is not constant, and
  // oneDNN's own scratchpad (0 when oneDNN has no kernel for the shape: run() then throws).
  uint64_t workspaceBytes(const ConvShape& shape, const Epilogue& epilogue, bool hasBias) const;

  // Y = epilogue(X (*) W + bias), W [M, C/group, kernel...]; bias may be null. `workspace(bytes)`
  // returns scratch memory of that size, 64-byte aligned. Safe to call from several threads at once.
  void run(const ConvShape& shape, const float* x, const float* w, const float* bias, const Epilogue& epilogue,
           float* y, const std::function<void*(uint64_t)>& workspace);

 private:
  struct Prepared;
  Prepared& prepared(const ConvShape& shape, const Epilogue& epilogue, bool hasBias);

  const bool weightsAreConstant_;
  const ActivationLayouts layouts_;
  std::unique_ptr<onednn::PackedWeights> packedWeights_;
  PreparedCache<Prepared> prepared_;
};

}  // namespace kiln::kernels
