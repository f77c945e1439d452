#include "precision_convert.h"

#include <kiln/error.h>

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/common/parallel.h>

#include <cstring>

namespace kiln {

using kernels::BFloat16;
using kernels::Float16;

HostTensor widenToFloat32(const HostTensor& t) {
  HostTensor out(DataType::kFloat32, t.dims());
  float* dst = out.data<float>();
  const auto* src = static_cast<const uint16_t*>(t.rawData());
  bool half = t.dtype() == DataType::kFloat16;
  if (!half && t.dtype() != DataType::kBFloat16)
    throw Error(ErrorCode::kInternal, "widenToFloat32 needs fp16 or bf16, got " + std::string(toString(t.dtype())));
  kernels::parallelFor(t.elementCount(), 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      dst[i] = half ? Float16::toFloat(src[i]) : float(BFloat16::fromBits(src[i]));
  });
  return out;
}

HostTensor narrowInPlace(const HostTensor& t, DataType to) {
  if (t.dtype() != DataType::kFloat32 || (to != DataType::kFloat16 && to != DataType::kBFloat16))
    throw Error(ErrorCode::kInternal, "narrowInPlace converts fp32 to fp16/bf16");
  HostTensor out = t.viewAs(to, t.dims());
  const float* src = t.data<float>();
  auto* dst = static_cast<uint16_t*>(out.rawData());
  bool half = to == DataType::kFloat16;
  // Sequential: element i's 2-byte write lands at or before its own 4-byte read, never ahead of a
  // later read, so one forward pass converts in place.
  for (int64_t i = 0; i < t.elementCount(); ++i) {
    float v = src[i];
    dst[i] = half ? Float16::fromFloat(v) : BFloat16::fromFloat(v);
  }
  return out;
}

void convertFloatStorage(DataType from, const void* in, DataType to, void* out, int64_t n) {
  auto narrow = [](DataType t) { return t == DataType::kFloat16 || t == DataType::kBFloat16; };
  if (from == to) {
    std::memcpy(out, in, size_t(n) * byteSize(from));
    return;
  }
  if (from == DataType::kFloat32 && narrow(to)) {
    const float* src = static_cast<const float*>(in);
    auto* dst = static_cast<uint16_t*>(out);
    const bool half = to == DataType::kFloat16;
    kernels::parallelFor(n, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = half ? Float16::fromFloat(src[i]) : BFloat16::fromFloat(src[i]);
    });
    return;
  }
  if (narrow(from) && to == DataType::kFloat32) {
    const auto* src = static_cast<const uint16_t*>(in);
    float* dst = static_cast<float*>(out);
    const bool half = from == DataType::kFloat16;
    kernels::parallelFor(n, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = half ? Float16::toFloat(src[i]) : float(BFloat16::fromBits(src[i]));
    });
    return;
  }
  throw Error(ErrorCode::kInternal, "no float storage conversion from " + std::string(toString(from)) + " to " +
                                        std::string(toString(to)));
}

HostTensor roundThrough(const HostTensor& t, DataType storage) {
  HostTensor copy = t.clone();
  return widenToFloat32(narrowInPlace(copy, storage));
}

}  // namespace kiln
