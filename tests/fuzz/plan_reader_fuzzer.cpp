// libFuzzer target: arbitrary bytes into readPlan, which verifies a plan (header, bounds, checksum,
// FlatBuffers verifier, weights references, network consistency) before trusting it. A kiln::Error
// is the correct answer to a damaged plan; a crash or sanitizer report is a bug.
// Build: cmake --preset fuzz && cmake --build --preset fuzz --target plan_reader_fuzzer
// Run:   scripts/run_fuzzer.sh plan_reader [SECONDS]
#include <kiln/error.h>

#include "plan/plan_format.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> plan(data, data + size);
  // Reseal the mutated bytes with their checksum: otherwise almost every mutation stops at the
  // checksum check, and the verifier and deserializer behind it would never see damaged metadata.
  if (plan.size() >= sizeof(kiln::PlanHeader)) {
    const uint64_t checksum = kiln::planChecksum(plan.data() + sizeof(kiln::PlanHeader),
                                                 plan.size() - sizeof(kiln::PlanHeader));
    std::memcpy(plan.data() + offsetof(kiln::PlanHeader, checksum), &checksum, sizeof checksum);
  }
  try {
    kiln::readPlan(plan);
  } catch (const kiln::Error&) {
  }
  return 0;
}
