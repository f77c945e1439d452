// libFuzzer target: arbitrary bytes into Runtime::load, which verifies a plan before trusting it.
// A kiln::Error is the correct answer to a damaged plan; a crash or sanitizer report is a bug.
// Build: cmake --preset fuzz && cmake --build --preset fuzz --target plan_reader_fuzzer
#include <kiln/error.h>
#include <kiln/runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kiln::Runtime().load(std::vector<uint8_t>(data, data + size));
  } catch (const kiln::Error&) {
  }
  return 0;
}
