#pragma once
// The plan file's fixed header. All integers little-endian.
//   [0, 64)            header
//   [metadataOffset)   FlatBuffers kiln.fb.Plan (plan.fbs)
//   [weightsOffset)    weights blob, 64-byte aligned, constants point into it
#include <cstdint>
#include <vector>

#include "engine_plan.h"

namespace kiln {

inline constexpr char kPlanMagic[8] = {'K', 'I', 'L', 'N', 'P', 'L', 'A', 'N'};
// 2: per-layer backend and role, per-tensor placement, one memory plan per memory space.
// 3: fp8 and fp4 quantized layers (Precision kFP4, kiln.Quantized*'s precision attribute), which a
//    version 2 reader would load and then fail to run.
inline constexpr uint32_t kPlanFormatVersion = 3;
inline constexpr uint64_t kPlanAlignment = 64;

struct PlanHeader {
  char magic[8];
  uint32_t formatVersion;
  uint32_t headerBytes;
  uint64_t metadataOffset;
  uint64_t metadataBytes;
  uint64_t weightsOffset;
  uint64_t weightsBytes;
  uint64_t checksum;  // FNV-1a 64 over everything after the header
  uint64_t reserved;
};
static_assert(sizeof(PlanHeader) == 64, "the plan header is 64 bytes");

uint64_t planChecksum(const uint8_t* data, uint64_t size);

std::vector<uint8_t> writePlan(const EnginePlan& plan);
// Verifies (header, bounds, checksum, FlatBuffers verifier, every weights reference) before it
// trusts a byte; throws kiln::Error(kInvalidArgument) naming what is wrong.
std::shared_ptr<EnginePlan> readPlan(const std::vector<uint8_t>& bytes);

}  // namespace kiln
