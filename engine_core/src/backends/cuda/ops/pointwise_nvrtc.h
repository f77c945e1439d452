#pragma once
// Build-time compilation of generated pointwise kernels with NVRTC into a cubin for one GPU
// architecture, the tactic payload that carries it in the plan, and an in-process cache so the
// many identical chains of a model (every squeeze-and-excitation block) compile once per process.
// Needs libnvrtc only, no GPU: CI compiles for sm_80 / sm_90 without one.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

// The options every kernel compiles with: the architecture and C++17; no --use_fast_math, so the
// math is IEEE as nvcc compiles kernels/cuda (fmad contraction on, as nvcc's default).
std::vector<std::string> nvrtcOptions(int arch);

// The cubin for `source` on sm_<arch> (arch 90 for sm_90), compiled once per (source hash,
// options, arch) in this process. Throws kiln::Error with NVRTC's log when compilation fails.
std::shared_ptr<const std::vector<uint8_t>> compileCubin(const std::string& source, int arch);
// How many compilations compileCubin has run in this process (cache hits excluded).
uint64_t nvrtcCompileCount();
// NVRTC's version as major * 1000 + minor * 10 (13000 for 13.0).
int nvrtcVersionNumber();

// The payload of an nvrtc.pointwise tactic, stored in the plan:
//   "KPWC" | u32 format version | u32 arch | u32 NVRTC version | u64 source hash |
//   u32 length + options (space separated) | u32 length + kernel names (comma separated) |
//   u64 length + cubin          (little-endian, nothing after the cubin)
struct PointwisePayload {
  static constexpr uint32_t kFormatVersion = 1;
  uint32_t arch = 0;
  uint32_t nvrtcVersion = 0;
  uint64_t sourceHash = 0;
  std::string options, kernels;
  std::vector<uint8_t> cubin;
};
std::vector<uint8_t> encodePointwisePayload(const PointwisePayload& payload);
// Throws kiln::Error naming `who` (a layer's describe()) when the bytes are not a payload of this
// format, or were compiled for an architecture other than `deviceArch`: "rebuild the plan on this GPU".
PointwisePayload decodePointwisePayload(const std::vector<uint8_t>& bytes, int deviceArch, const std::string& who);

}  // namespace kiln::cuda
