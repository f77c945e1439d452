#include <kiln/error.h>
#include <kiln/random_data.h>

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace kiln {
namespace {

TEST(RandomData, SameSeedSameValuesOtherSeedOthers) {
  HostTensor a = randomTensor(DataType::kFloat32, {4, 8}, 7);
  HostTensor b = randomTensor(DataType::kFloat32, {4, 8}, 7);
  HostTensor c = randomTensor(DataType::kFloat32, {4, 8}, 8);
  int differing = 0;
  for (int64_t i = 0; i < a.elementCount(); ++i) {
    EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]);
    differing += a.data<float>()[i] != c.data<float>()[i];
  }
  EXPECT_GT(differing, 28);
}

TEST(RandomData, FloatsAreSpreadAndNeverNearZero) {
  HostTensor t = randomTensor(DataType::kFloat64, {10000}, 3);
  double low = 1, high = -1, sum = 0;
  for (int64_t i = 0; i < t.elementCount(); ++i) {
    double v = t.data<double>()[i];
    EXPECT_GE(std::abs(v), 1.0 / 64);
    EXPECT_LT(std::abs(v), 1.0);
    low = std::min(low, v), high = std::max(high, v), sum += v;
  }
  EXPECT_LT(low, -0.95);
  EXPECT_GT(high, 0.95);
  EXPECT_NEAR(sum / double(t.elementCount()), 0.0, 0.05);
}

TEST(RandomData, IntegersCoverOneToFourAndBoolsBothValues) {
  HostTensor ints = randomTensor(DataType::kInt64, {1000}, 11);
  std::set<int64_t> seen(ints.data<int64_t>(), ints.data<int64_t>() + ints.elementCount());
  EXPECT_EQ(seen, (std::set<int64_t>{1, 2, 3, 4}));
  HostTensor flags = randomTensor(DataType::kBool, {64}, 11);
  int trues = 0;
  for (int64_t i = 0; i < flags.elementCount(); ++i) trues += flags.data<bool>()[i];
  EXPECT_GT(trues, 8);
  EXPECT_LT(trues, 56);
}

TEST(RandomData, PerTensorSeedsDifferByName) {
  EXPECT_NE(seedForTensor(1, "input_ids"), seedForTensor(1, "attention_mask"));
  EXPECT_EQ(seedForTensor(1, "x"), seedForTensor(1, "x"));
  EXPECT_NE(seedForTensor(1, "x"), seedForTensor(2, "x"));
}

TEST(RandomData, UndefinedTypeIsAnError) {
  EXPECT_THROW(randomTensor(DataType::kUndefined, {2}, 1), Error);
}

}  // namespace
}  // namespace kiln
