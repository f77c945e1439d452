#pragma once
// GPU tests skip, with the reason printed, where no CUDA device is usable (CI, laptops).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

namespace kiln::test {

// Empty when a device is usable, else why not.
inline std::string whyNoGpu() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(status);
  if (count == 0) return "no CUDA device present";
  return "";
}

#define KILN_REQUIRE_GPU()                                          \
  do {                                                              \
    if (const std::string why = ::kiln::test::whyNoGpu(); !why.empty()) \
      GTEST_SKIP() << "GPU test skipped: " << why;                 \
  } while (0)

#define KILN_CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(cudaGetLastError())

}  // namespace kiln::test
