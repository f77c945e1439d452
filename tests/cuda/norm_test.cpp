// The CUDA normalisations against the CPU kernels: LayerNormalization (with and without bias,
// statistics out, the fused residual add, in place), InstanceNormalization, GroupNormalization,
// BatchNormalization, LpNormalization, MeanVarianceNormalization and LRN, every float type.
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/elementwise/binary.h>
#include <kernels/cpu/norm/norm.h>
#include <kernels/cuda/norm/norm.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;

namespace {

// The CPU computes statistics in double, the kernels in float: float32 results agree to a few
// 1e-6 for long rows.
template <class T>
double normTolerance() {
  return std::is_same_v<T, float> ? 2e-5 : defaultTolerance<T>();
}

template <class T>
void checkLayerNorm(int64_t outer, int64_t inner, bool withBias, bool withResidual) {
  const int64_t count = outer * inner;
  const uint32_t seed = uint32_t(count + inner);
  const std::vector<T> x = randomValues<T>(count, -1, 3, seed), residual = randomValues<T>(count, -2, 2, seed + 1);
  const std::vector<float> scale = randomValues<float>(inner, 0.5, 1.5, seed + 2),
                           bias = randomValues<float>(inner, -1, 1, seed + 3);
  std::vector<T> normalised = x;
  if (withResidual)
    kiln::kernels::binary<T>(kiln::kernels::BinaryOp::kAdd, x.data(), residual.data(), normalised.data(),
                             kiln::kernels::BroadcastPlan({count}, {{count}, {count}}));
  std::vector<T> want(static_cast<size_t>(count));
  std::vector<float> wantMean(static_cast<size_t>(outer)), wantInvStd(static_cast<size_t>(outer));
  kiln::kernels::normalizeRows<T>(outer, inner, normalised.data(), {scale.data(), withBias ? bias.data() : nullptr, 1, inner, 1},
                                  1e-5f, want.data(), wantMean.data(), wantInvStd.data());
  DeviceBuffer dx(x), dr(residual), dScale(scale), dBias(bias), y(size_t(count) * sizeof(T)),
      sum(size_t(count) * sizeof(T)), mean(size_t(outer) * sizeof(float)), invStd(size_t(outer) * sizeof(float));
  std::vector<const DeviceBuffer*> outputs{&y, &mean, &invStd};
  if (withResidual) outputs.push_back(&sum);
  ASSERT_TRUE(runPoisoned(outputs, [&] {
    return launchLayerNormalization(dx.data(), withResidual ? dr.data() : nullptr, withResidual ? sum.data() : nullptr,
                                    dScale.as<float>(), withBias ? dBias.as<float>() : nullptr, outer, inner, 1e-5f,
                                    y.data(), mean.as<float>(), invStd.as<float>(), elementTypeOf<T>(), nullptr);
  }));
  const std::string what = std::string(toString(elementTypeOf<T>())) + " [" + std::to_string(outer) + "," +
                           std::to_string(inner) + "]" + (withBias ? " bias" : "") + (withResidual ? " residual" : "");
  EXPECT_TRUE(closeTo(y.read<T>(), want, normTolerance<T>())) << what;
  EXPECT_TRUE(closeTo(mean.read<float>(), wantMean, 2e-5)) << what;
  EXPECT_TRUE(closeTo(invStd.read<float>(), wantInvStd, 2e-5)) << what;
  if (withResidual) {
    EXPECT_TRUE(closeTo(sum.read<T>(), normalised, 0)) << what;  // the same rounding as Add
  }
}

template <class T>
void checkLayerNorms() {
  for (const auto& [outer, inner] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {7, 33}, {5, 768}, {3, 1001}, {2, 5000}, {1000, 8}, {0, 5}, {4, 3},
           // the register path (rows of whole 16-byte vectors, up to 2048 elements): a lane's last
           // vector partly used, the longest row, blocks of several warps with the last one partial,
           // and a row just too long for it
           {3, 1032}, {9, 2048}, {4099, 64}, {2, 2056}})
    for (bool withBias : {false, true})
      for (bool withResidual : {false, true}) checkLayerNorm<T>(outer, inner, withBias, withResidual);
}

}  // namespace

TEST(CudaNorm, LayerNormalizationMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkLayerNorms<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

TEST(CudaNorm, ResidualSumInPlace) {
  KILN_REQUIRE_GPU();
  const int64_t outer = 6, inner = 300, count = outer * inner;
  const std::vector<float> x = randomValues<float>(count, -1, 1, 1), residual = randomValues<float>(count, -1, 1, 2),
                           scale(static_cast<size_t>(inner), 1.0f);
  std::vector<float> sum(static_cast<size_t>(count)), want(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) sum[size_t(i)] = x[size_t(i)] + residual[size_t(i)];
  kiln::kernels::normalizeRows<float>(outer, inner, sum.data(), {scale.data(), nullptr, 1, inner, 1}, 1e-5f, want.data());
  DeviceBuffer dx(x), dr(residual), dScale(scale), y(size_t(count) * sizeof(float));
  // residual += x; y = LN(residual)
  ASSERT_EQ(launchLayerNormalization(dx.data(), dr.data(), dr.data(), dScale.as<float>(), nullptr, outer, inner, 1e-5f,
                                     y.data(), nullptr, nullptr, ElementType::kFloat32, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(closeTo(dr.read<float>(), sum, 0));
  EXPECT_TRUE(closeTo(y.read<float>(), want, 2e-5));
}

namespace {

template <class T>
void checkChannelNorms() {
  struct Case {
    int64_t batch, channels, spatial, groups;
  };
  for (const Case& c : {Case{2, 6, 49, 3}, Case{1, 32, 64, 8}, Case{2, 4, 1, 2}, Case{3, 5, 1000, 5}, Case{1, 16, 1, 1},
                        Case{2, 3, 7, 1}}) {
    const int64_t count = c.batch * c.channels * c.spatial;
    const uint32_t seed = uint32_t(count);
    const std::vector<T> x = randomValues<T>(count, -2, 3, seed);
    const std::vector<float> scale = randomValues<float>(c.channels, 0.5, 1.5, seed + 1),
                             bias = randomValues<float>(c.channels, -1, 1, seed + 2),
                             mean = randomValues<float>(c.channels, -1, 1, seed + 3),
                             variance = randomValues<float>(c.channels, 0.2, 2, seed + 4);
    DeviceBuffer dx(x), dScale(scale), dBias(bias), dMean(mean), dVariance(variance), y(size_t(count) * sizeof(T));
    const std::string what = std::string(toString(elementTypeOf<T>())) + " [" + std::to_string(c.batch) + "," +
                             std::to_string(c.channels) + "," + std::to_string(c.spatial) + "]";
    std::vector<T> want(static_cast<size_t>(count));

    kiln::kernels::normalizeRows<T>(c.batch * c.channels, c.spatial, x.data(),
                                    {scale.data(), bias.data(), c.channels, 1, c.spatial}, 1e-5f, want.data());
    ASSERT_TRUE(runPoisoned(y, [&] {
      return launchInstanceNormalization(dx.data(), dScale.as<float>(), dBias.as<float>(), c.batch, c.channels,
                                         c.spatial, 1e-5f, y.data(), elementTypeOf<T>(), nullptr);
    }));
    EXPECT_TRUE(closeTo(y.read<T>(), want, normTolerance<T>())) << "instance " << what;

    const int64_t perGroup = c.channels / c.groups;
    kiln::kernels::normalizeRows<T>(c.batch * c.groups, perGroup * c.spatial, x.data(),
                                    {scale.data(), bias.data(), c.groups, perGroup, c.spatial}, 1e-5f, want.data());
    ASSERT_TRUE(runPoisoned(y, [&] {
      return launchGroupNormalization(dx.data(), dScale.as<float>(), dBias.as<float>(), c.batch, c.channels, c.spatial,
                                      c.groups, 1e-5f, y.data(), elementTypeOf<T>(), nullptr);
    }));
    EXPECT_TRUE(closeTo(y.read<T>(), want, normTolerance<T>())) << "group " << c.groups << " " << what;

    kiln::kernels::batchNormalization<T>(c.batch, c.channels, c.spatial, x.data(), scale.data(), bias.data(),
                                         mean.data(), variance.data(), 1e-5f, want.data());
    ASSERT_TRUE(runPoisoned(y, [&] {
      return launchBatchNormalization(dx.data(), dScale.as<float>(), dBias.as<float>(), dMean.as<float>(),
                                      dVariance.as<float>(), c.batch, c.channels, c.spatial, 1e-5f, y.data(),
                                      elementTypeOf<T>(), nullptr);
    }));
    EXPECT_TRUE(closeTo(y.read<T>(), want)) << "batch " << what;
  }
}

}  // namespace

TEST(CudaNorm, InstanceGroupAndBatchNormalizationMatchCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkChannelNorms<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
#undef KILN_CHECK
  DeviceBuffer buffer(64);
  EXPECT_EQ(launchGroupNormalization(buffer.data(), buffer.as<float>(), buffer.as<float>(), 1, 6, 1, 4, 1e-5f,
                                     buffer.data(), ElementType::kFloat32, nullptr),
            cudaErrorInvalidValue);
}

namespace {

template <class T>
void checkLpAndMeanVariance() {
  struct Line {
    int64_t outer, axis, inner;
  };
  for (const Line& l : {Line{1, 1001, 1}, Line{7, 33, 1}, Line{5, 17, 3}, Line{2, 1, 7}, Line{3, 5000, 2}, Line{0, 4, 2}}) {
    const int64_t count = l.outer * l.axis * l.inner;
    std::vector<T> x = randomValues<T>(count, -3, 3, uint32_t(count));
    if (l.inner == 1 && l.outer > 1)
      for (int64_t i = 0; i < l.axis; ++i) x[size_t(i)] = fromDouble<T>(0.0);  // a zero line stays 0
    DeviceBuffer dx(x), y(size_t(count) * sizeof(T));
    for (int64_t p : {1, 2}) {
      std::vector<T> want(static_cast<size_t>(count));
      kiln::kernels::lpNormalization<T>(l.outer, l.axis, l.inner, x.data(), p, want.data());
      ASSERT_TRUE(runPoisoned(y, [&] {
        return launchLpNormalization(dx.data(), l.outer, l.axis, l.inner, p, y.data(), elementTypeOf<T>(), nullptr);
      }));
      EXPECT_TRUE(closeTo(y.read<T>(), want)) << toString(elementTypeOf<T>()) << " p " << p << " [" << l.outer << ","
                                              << l.axis << "," << l.inner << "]";
    }
  }
  for (const auto& [dims, reduced] : std::vector<std::pair<std::vector<int64_t>, std::vector<bool>>>{
           {{2, 3, 4, 5}, {true, false, true, true}},
           {{3, 7}, {false, true}},
           {{2, 3, 4}, {true, true, true}},
           {{5, 1, 9}, {false, true, false}},
           {{4, 300, 2}, {false, true, false}}}) {
    const int64_t count = elementCount(dims);
    const std::vector<T> x = randomValues<T>(count, -1, 4, uint32_t(count) + 7);
    std::vector<T> want(static_cast<size_t>(count));
    kiln::kernels::meanVarianceNormalization<T>(dims, reduced, x.data(), want.data());
    DeviceBuffer dx(x), y(size_t(count) * sizeof(T));
    ASSERT_TRUE(runPoisoned(y, [&] {
      return launchMeanVarianceNormalization(dx.data(), dims, reduced, y.data(), elementTypeOf<T>(), nullptr);
    }));
    EXPECT_TRUE(closeTo(y.read<T>(), want, normTolerance<T>())) << toString(elementTypeOf<T>()) << " " << dimsText(dims);
  }
}

}  // namespace

TEST(CudaNorm, LpAndMeanVarianceNormalizationMatchCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkLpAndMeanVariance<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
#undef KILN_CHECK
  DeviceBuffer buffer(64);
  EXPECT_EQ(launchLpNormalization(buffer.data(), 1, 4, 1, 3, buffer.data(), ElementType::kFloat32, nullptr),
            cudaErrorInvalidValue);
}

namespace {

template <class T>
void checkLrn() {
  struct Case {
    int64_t batch, channels, spatial, size;
  };
  for (const Case& c : {Case{1, 5, 9, 3}, Case{2, 7, 13, 5}, Case{1, 3, 1, 8}, Case{3, 1, 4, 1}, Case{2, 6, 5, 2},
                        Case{0, 4, 3, 3}}) {
    const int64_t count = c.batch * c.channels * c.spatial;
    const std::vector<T> x = randomValues<T>(count, -3, 3, uint32_t(count + c.size));
    std::vector<T> want(static_cast<size_t>(count));
    kiln::kernels::localResponseNormalization<T>(c.batch, c.channels, c.spatial, x.data(), c.size, 2e-2f, 0.75f,
                                                 1.5f, want.data());
    DeviceBuffer dx(x), y(size_t(count) * sizeof(T));
    ASSERT_TRUE(runPoisoned(y, [&] {
      return launchLocalResponseNormalization(dx.data(), c.batch, c.channels, c.spatial, c.size, 2e-2f, 0.75f, 1.5f,
                                              y.data(), elementTypeOf<T>(), nullptr);
    }));
    EXPECT_TRUE(closeTo(y.read<T>(), want, normTolerance<T>()))
        << toString(elementTypeOf<T>()) << " [" << c.batch << "," << c.channels << "," << c.spatial << "] size "
        << c.size;
  }
}

}  // namespace

TEST(CudaNorm, LocalResponseNormalizationMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkLrn<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
#undef KILN_CHECK
  DeviceBuffer buffer(64);
  EXPECT_EQ(launchLocalResponseNormalization(buffer.data(), 1, 4, 1, 0, 1e-4f, 0.75f, 1, buffer.data(),
                                             ElementType::kFloat32, nullptr),
            cudaErrorInvalidValue);
}
