#pragma once
// Pad (and CenterCropPad): every output axis maps each coordinate to a source coordinate or to the
// constant. Negative pads crop.
#include <cstdint>
#include <vector>

namespace kiln::kernels {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// dst has dims srcDims[d] + padsBegin[d] + padsEnd[d]. Non-constant modes need every source axis that
// gets padded to be non-empty (the caller checks).
template <class T>
void pad(const T* src, const std::vector<int64_t>& srcDims, T* dst, const std::vector<int64_t>& padsBegin,
         const std::vector<int64_t>& dstDims, PadMode mode, const T& constant);

}  // namespace kiln::kernels
