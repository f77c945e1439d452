// The CUDA NegativeLogLikelihoodLoss against the CPU kernel: every float type, int32 and int64
// targets, with and without class weights and ignore_index (also one no target has, and one that
// ignores every position: the mean is then NaN on both), every reduction, 2-D and N-d inputs,
// sums over enough positions to take several partial blocks, and targets that are not classes
// (NaN here, where the CPU fails).
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/softmax/softmax.h>
#include <kernels/cuda/loss/loss.h>

#include <optional>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
using kiln::kernels::LossReduction;

namespace {

struct LossCase {
  int64_t batch, classes, spatial;
};

const std::vector<LossCase> kCases{{1, 1, 1}, {3, 5, 1}, {2, 7, 9}, {1, 4, 33}, {5, 3, 2000}, {0, 4, 3}};

template <class T, class I>
void checkNll(const LossCase& c, bool weighted, std::optional<int64_t> ignore, LossReduction reduction) {
  const int64_t positions = c.batch * c.spatial;
  const std::vector<T> logProb = randomValues<T>(c.batch * c.classes * c.spatial, -6, -0.01, uint32_t(positions + 1));
  const std::vector<T> weight = randomValues<T>(c.classes, 0.2, 2, uint32_t(c.classes));
  std::vector<I> target(static_cast<size_t>(positions));
  for (int64_t p = 0; p < positions; ++p) target[size_t(p)] = I((p * 7 + 3) % c.classes);
  if (ignore && *ignore >= 0 && *ignore < c.classes)
    for (int64_t p = 0; p < positions; p += 5) target[size_t(p)] = I(*ignore);
  const int64_t outputs = reduction == LossReduction::kNone ? positions : 1;
  std::vector<T> want(static_cast<size_t>(outputs));
  const int64_t bad = kiln::kernels::negativeLogLikelihoodLoss<T, I>(
      logProb.data(), target.data(), weighted ? weight.data() : nullptr, want.data(), c.batch, c.classes, c.spatial,
      reduction, ignore ? &*ignore : nullptr);
  ASSERT_EQ(bad, -1);
  const size_t workspaceBytes = nllLossWorkspaceBytes(c.batch, c.spatial, reduction);
  DeviceBuffer x(logProb), t(target), w(weight), loss(size_t(outputs) * sizeof(T)), workspace(workspaceBytes);
  if (outputs == 0) return;
  ASSERT_TRUE(runPoisoned(loss, [&] {
    return launchNllLoss(x.data(), t.data(), elementTypeOf<I>(), weighted ? w.data() : nullptr, loss.data(), c.batch,
                         c.classes, c.spatial, reduction, ignore ? &*ignore : nullptr, elementTypeOf<T>(),
                         workspace.data(), workspaceBytes, nullptr);
  }));
  EXPECT_TRUE(closeTo(loss.read<T>(), want))
      << toString(elementTypeOf<T>()) << " [" << c.batch << "," << c.classes << "," << c.spatial << "] weighted "
      << weighted << " ignore " << (ignore ? *ignore : -999) << " reduction " << int(reduction);
}

template <class T>
void checkEveryNll() {
  for (const LossCase& c : kCases)
    for (LossReduction reduction : {LossReduction::kNone, LossReduction::kSum, LossReduction::kMean})
      for (bool weighted : {false, true})
        for (std::optional<int64_t> ignore : {std::optional<int64_t>(), std::optional<int64_t>(0),
                                              std::optional<int64_t>(-1), std::optional<int64_t>(c.classes + 3)}) {
          checkNll<T, int64_t>(c, weighted, ignore, reduction);
          checkNll<T, int32_t>(c, weighted, ignore, reduction);
        }
}

}  // namespace

TEST(CudaLoss, NegativeLogLikelihoodMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkEveryNll<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

// Every target ignored: zero total weight, so the mean is 0 / 0 as on the CPU.
TEST(CudaLoss, MeanOverNothingIsNaN) {
  KILN_REQUIRE_GPU();
  const std::vector<float> logProb{-1, -2, -3, -4};
  const std::vector<int64_t> target{1, 1};
  const int64_t ignore = 1;
  float want = 0;
  kiln::kernels::negativeLogLikelihoodLoss<float, int64_t>(logProb.data(), target.data(), nullptr, &want, 2, 2, 1,
                                                           LossReduction::kMean, &ignore);
  const size_t workspaceBytes = nllLossWorkspaceBytes(2, 1, LossReduction::kMean);
  DeviceBuffer x(logProb), t(target), loss(sizeof(float)), workspace(workspaceBytes);
  ASSERT_EQ(launchNllLoss(x.data(), t.data(), ElementType::kInt64, nullptr, loss.data(), 2, 2, 1, LossReduction::kMean,
                          &ignore, ElementType::kFloat32, workspace.data(), workspaceBytes, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(std::isnan(want));
  EXPECT_TRUE(std::isnan(loss.read<float>()[0]));
}

TEST(CudaLoss, TargetsThatAreNotClassesGiveNaN) {
  KILN_REQUIRE_GPU();
  const std::vector<float> logProb{-1, -2, -3, -4, -5, -6};
  const std::vector<int32_t> target{2, 3, -1};  // [3, 2] scores: none of them is a class
  const size_t workspaceBytes = nllLossWorkspaceBytes(3, 1, LossReduction::kSum);
  DeviceBuffer x(logProb), t(target), none(3 * sizeof(float)), sum(sizeof(float)), workspace(workspaceBytes);
  ASSERT_EQ(launchNllLoss(x.data(), t.data(), ElementType::kInt32, nullptr, none.data(), 3, 2, 1, LossReduction::kNone,
                          nullptr, ElementType::kFloat32, nullptr, 0, nullptr),
            cudaSuccess);
  ASSERT_EQ(launchNllLoss(x.data(), t.data(), ElementType::kInt32, nullptr, sum.data(), 3, 2, 1, LossReduction::kSum,
                          nullptr, ElementType::kFloat32, workspace.data(), workspaceBytes, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = none.read<float>();
  EXPECT_TRUE(std::isnan(got[0]) && std::isnan(got[1]) && std::isnan(got[2])) << got[0] << " " << got[1];
  EXPECT_TRUE(std::isnan(sum.read<float>()[0]));
}

TEST(CudaLoss, RefusesWhatItDoesNotTake) {
  KILN_REQUIRE_GPU();
  DeviceBuffer buffer(64);
  EXPECT_EQ(launchNllLoss(buffer.data(), buffer.data(), ElementType::kInt16, nullptr, buffer.data(), 1, 2, 1,
                          LossReduction::kNone, nullptr, ElementType::kFloat32, nullptr, 0, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launchNllLoss(buffer.data(), buffer.data(), ElementType::kInt64, nullptr, buffer.data(), 1, 2, 1,
                          LossReduction::kNone, nullptr, ElementType::kInt32, nullptr, 0, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launchNllLoss(buffer.data(), buffer.data(), ElementType::kInt64, nullptr, buffer.data(), 1, 2, 1,
                          LossReduction::kMean, nullptr, ElementType::kFloat32, nullptr, 0, nullptr),
            cudaErrorInvalidValue);
}
