// libFuzzer target: arbitrary bytes into OnnxImporter::importBytes. A kiln::Error is the correct
// answer to bad input; a crash, sanitizer report or any other exception is a bug.
// Build: cmake --preset fuzz && cmake --build --preset fuzz --target onnx_importer_fuzzer
// Run:   scripts/run_fuzzer.sh onnx_importer [SECONDS]
#include <kiln/error.h>
#include <kiln/onnx_importer.h>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // A folder that does not exist: external-data references fail cleanly instead of reading
    // whatever files happen to lie in the working directory.
    kiln::OnnxImporter().importBytes(std::string(reinterpret_cast<const char*>(data), size),
                                     "/nonexistent-kiln-fuzz-dir");
  } catch (const kiln::Error&) {
  }
  return 0;
}
