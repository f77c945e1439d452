#pragma once
// Pad (and CenterCropPad): every output axis maps each coordinate to a source coordinate or to
// the constant; negative pads crop. Modes as ONNX Pad: constant, reflect (mirror without
// repeating the edge, periodic beyond one reflection), edge, wrap. Any dtype, moved by size.
#include <kernels/cuda/common/element_type.h>
#include <kernels/cuda/common/host_device.h>
#include <kernels/cuda/common/tensor_geometry.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln::kernels::cuda {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// dst has dstDims (srcDims[d] + padsBegin[d] + padsEnd[d]); `constantValue` is a device pointer
// to one element of `type` (ONNX's constant_value input), or null for zero. Non-constant modes need
// every axis they pad to be non-empty in the source.
cudaError_t pad(const void* src, const std::vector<int64_t>& srcDims, void* dst, const std::vector<int64_t>& padsBegin,
                const std::vector<int64_t>& dstDims, PadMode mode, const void* constantValue, ElementType type,
                cudaStream_t stream);

// Per-element geometry shared by the kernel and the host tests.
template <class Index>
struct PadGeometry {
  int rank = 0;
  PadMode mode = PadMode::kConstant;
  Index dstDims[kMaxRank] = {};
  Index srcDims[kMaxRank] = {};
  Index srcStrides[kMaxRank] = {};
  Index padsBegin[kMaxRank] = {};

  // Source coordinate on axis d of output coordinate o, or -1 where the constant goes.
  KILN_HD Index sourceCoordinate(int d, Index o) const {
    const Index n = srcDims[d], i = o - padsBegin[d];
    if (i >= 0 && i < n) return i;
    switch (mode) {
      case PadMode::kConstant: return -1;
      case PadMode::kEdge: return i < 0 ? 0 : n - 1;
      case PadMode::kWrap: return ((i % n) + n) % n;
      case PadMode::kReflect: {
        if (n == 1) return 0;
        const Index period = 2 * (n - 1), r = ((i % period) + period) % period;
        return r < n ? r : period - r;
      }
    }
    return -1;
  }

  // Source offset of output element `linear`, or -1 for the constant.
  KILN_HD Index sourceOffset(Index linear) const {
    Index offset = 0;
    bool constant = false;
    for (int d = rank - 1; d >= 0; --d) {
      const Index c = sourceCoordinate(d, linear % dstDims[d]);
      linear /= dstDims[d];
      constant = constant || c < 0;
      offset += c * srcStrides[d];
    }
    return constant ? Index(-1) : offset;
  }
};

// The geometry of a pad, with neighbouring unpadded axes merged (fewer divisions per element);
// nullopt for arguments pad() refuses.
std::optional<PadGeometry<int64_t>> padGeometry(const std::vector<int64_t>& srcDims,
                                                const std::vector<int64_t>& padsBegin,
                                                const std::vector<int64_t>& dstDims, PadMode mode);

}  // namespace kiln::kernels::cuda
