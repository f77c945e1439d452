// The CUDA determinant kernel (kernels/cuda/linalg) against the CPU's (kernels/cpu/gemm): random,
// singular, pivoting-needing and 1x1 / 0x0 matrices, in float32, float16 and float64.
#include "cuda/layout_test_support.h"

#include <kernels/cpu/gemm/determinant.h>
#include <kernels/cuda/linalg/linalg.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

TEST(LinalgKernels, DeterminantsMatchTheCpu) {
  KILN_REQUIRE_GPU();
  for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kFloat64})
    for (auto [batch, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {3, 2}, {7, 5}, {1, 1}, {2, 0}, {4, 9}}) {
      SCOPED_TRACE(std::string(toString(type)) + " batch " + std::to_string(batch) + " n " + std::to_string(n));
      auto values = valuesOf(randomElements(type, batch * n * n, 31), type);
      if (batch > 2 && n > 1) {  // matrix 1 singular (two equal rows), matrix 2 with a zero leading pivot
        for (int64_t c = 0; c < n; ++c) values[size_t(n * n + n + c)] = values[size_t(n * n + c)];
        values[size_t(2 * n * n)] = 0;
      }
      std::vector<double> want(static_cast<size_t>(batch));
      cpu::determinants<double>(values.data(), want.data(), batch, n);
      DeviceBuffer in(fromValues(values, type)), out(byteSize(type, batch));
      DeviceBuffer workspace(determinantWorkspaceBytes(batch, n));
      EXPECT_TRUE(launchOverPoison(out, [&] { return determinants(in.get(), out.get(), batch, n, workspace.get(), type, nullptr); }));
      EXPECT_TRUE(closeValues(valuesOf(out.download(), type), valuesOf(fromValues(want, type), type),
                              type == ElementType::kFloat16 ? 3e-3 : toleranceFor(type)));
    }
}

TEST(LinalgKernels, DeterminantsRefuseIntegers) {
  EXPECT_EQ(determinants(nullptr, nullptr, 1, 2, nullptr, ElementType::kInt32, nullptr), cudaErrorInvalidValue);
}

}  // namespace
