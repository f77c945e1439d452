// The CUDA selection kernels (kernels/cuda/selection) against the CPU kernels: NonZero and Unique
// (kernels/cpu/layout/select), NonMaxSuppression (kernels/cpu/detection) and Compress's selection
// (a plain loop, as the CPU op does it). Sizes cross the per-block chunks of the ordered scans;
// empty results and ties (the stable orders) are covered.
#include "layout_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/detection/non_max_suppression.h>
#include <kernels/cpu/layout/select.h>
#include <kernels/cuda/selection/selection.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

using Dims = std::vector<int64_t>;

std::string dimsText(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Values with many zeros (or repeats) from a small range, so that selections are neither empty nor full.
std::vector<float> smallValues(int64_t n, int range, uint32_t seed, float zeroShare = 0.5f) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(-range, range);
  std::uniform_real_distribution<float> share(0, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = share(rng) < zeroShare ? 0.0f : float(value(rng));
  return v;
}

int64_t readCount(const DeviceBuffer& count) { return count.read<int64_t>().at(0); }

TEST(CudaNonZero, MatchesTheCpuKernelAcrossChunks) {
  KILN_REQUIRE_GPU();
  for (const Dims& dims : std::vector<Dims>{{1}, {7}, {2, 3}, {3, 1, 5}, {257}, {3, 700}, {0}, {2, 0, 3}}) {
    for (float zeros : {0.5f, 1.0f, 0.0f}) {
      const int64_t n = countOf(dims);
      const std::vector<float> x = smallValues(n, 3, uint32_t(n) + 7, zeros);
      const std::vector<int64_t> expected = cpu::nonZeroCoordinates(x.data(), dims);
      DeviceBuffer dx(x), workspace(nonZeroWorkspaceBytes(n)), count(sizeof(int64_t));
      KILN_CUDA_OK(nonZeroCount(dx.get(), ElementType::kFloat32, n, workspace.get(), count.as<int64_t>(), nullptr));
      const int64_t found = readCount(count);
      ASSERT_EQ(found * int64_t(dims.size()), int64_t(expected.size())) << dimsText(dims);
      DeviceBuffer out(expected.size() * sizeof(int64_t));
      KILN_CUDA_OK(nonZeroWrite(dx.get(), ElementType::kFloat32, dims, found, workspace.get(), out.as<int64_t>(), nullptr));
      EXPECT_EQ(out.read<int64_t>(), expected) << dimsText(dims) << " zeros " << zeros;
    }
  }
}

TEST(CudaNonZero, ReadsBoolIntegerAndHalfElements) {
  KILN_REQUIRE_GPU();
  const Dims dims{4, 5};
  const std::vector<uint8_t> flags{1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1};
  const std::vector<int64_t> expected = cpu::nonZeroCoordinates(flags.data(), dims);
  std::vector<int32_t> ints(flags.begin(), flags.end());
  std::vector<uint16_t> halves;
  for (uint8_t f : flags) halves.push_back(f ? cpu::Float16(float(f) * -2.5f).bits : uint16_t(0x8000));  // -0.0 is zero
  const std::vector<std::pair<ElementType, std::vector<uint8_t>>> inputs{
      {ElementType::kBool, flags},
      {ElementType::kInt32, {reinterpret_cast<const uint8_t*>(ints.data()),
                             reinterpret_cast<const uint8_t*>(ints.data() + ints.size())}},
      {ElementType::kFloat16, {reinterpret_cast<const uint8_t*>(halves.data()),
                               reinterpret_cast<const uint8_t*>(halves.data() + halves.size())}}};
  for (const auto& [type, bytes] : inputs) {
    DeviceBuffer dx(bytes), workspace(nonZeroWorkspaceBytes(20)), count(sizeof(int64_t));
    KILN_CUDA_OK(nonZeroCount(dx.get(), type, 20, workspace.get(), count.as<int64_t>(), nullptr));
    const int64_t found = readCount(count);
    ASSERT_EQ(found * 2, int64_t(expected.size())) << toString(type);
    DeviceBuffer out(expected.size() * sizeof(int64_t));
    KILN_CUDA_OK(nonZeroWrite(dx.get(), type, dims, found, workspace.get(), out.as<int64_t>(), nullptr));
    EXPECT_EQ(out.read<int64_t>(), expected) << toString(type);
  }
}

TEST(CudaCompress, SelectsTheTruePositionsInOrder) {
  KILN_REQUIRE_GPU();
  for (int64_t n : {0, 1, 5, 256, 257, 1300}) {
    for (float falses : {0.0f, 0.4f, 1.0f}) {
      const std::vector<float> v = smallValues(n, 1, uint32_t(n) * 3 + 1, falses);
      std::vector<uint8_t> condition;
      std::vector<int64_t> expected;
      for (int64_t i = 0; i < n; ++i) {
        condition.push_back(v[size_t(i)] != 0.0f);
        if (condition.back()) expected.push_back(i);
      }
      DeviceBuffer dc(condition), workspace(selectTrueWorkspaceBytes(n)), selected(size_t(n) * 8), count(8);
      KILN_CUDA_OK(selectTrue(static_cast<const bool*>(dc.get()), n, workspace.get(), selected.as<int64_t>(),
                              count.as<int64_t>(), nullptr));
      ASSERT_EQ(readCount(count), int64_t(expected.size())) << n;
      std::vector<int64_t> got = selected.read<int64_t>();
      got.resize(expected.size());
      EXPECT_EQ(got, expected) << n << " falses " << falses;
    }
  }
}

struct UniqueCase {
  Dims dims;
  int axis;  // -1: flattened
};

TEST(CudaUnique, MatchesTheCpuKernelSortedAndInFirstOccurrenceOrder) {
  KILN_REQUIRE_GPU();
  const std::vector<UniqueCase> cases{{{1}, -1},    {{9}, -1},       {{300}, -1},       {{3, 3}, 0},  {{3, 3}, 1},
                                      {{2, 5, 3}, 1}, {{4, 6, 2}, 2}, {{0}, -1},         {{2, 0}, 1},  {{17, 2}, 0},
                                      {{1, 1, 1}, 1}};
  for (const auto& c : cases) {
    for (bool sorted : {true, false}) {
      const int64_t n = countOf(c.dims);
      const std::vector<float> x = smallValues(n, 2, uint32_t(n) + 11, 0.3f);
      UniqueShape shape;
      if (c.axis < 0) {
        shape.slices = n;
      } else {
        shape.slices = c.dims[size_t(c.axis)];
        for (int d = 0; d < c.axis; ++d) shape.outer *= c.dims[size_t(d)];
        for (size_t d = size_t(c.axis) + 1; d < c.dims.size(); ++d) shape.inner *= c.dims[d];
      }
      const cpu::UniqueSlices expected = cpu::uniqueSlices(x.data(), shape.outer, shape.slices, shape.inner, sorted);
      const std::string what = dimsText(c.dims) + " axis " + std::to_string(c.axis) + (sorted ? " sorted" : " unsorted");
      DeviceBuffer dx(x), workspace(uniqueWorkspaceBytes(shape)), groupCount(8);
      KILN_CUDA_OK(uniqueGroup(dx.get(), ElementType::kFloat32, shape, sorted, workspace.get(), groupCount.as<int64_t>(),
                               nullptr));
      const int64_t groups = readCount(groupCount);
      ASSERT_EQ(groups, int64_t(expected.firstOccurrence.size())) << what;
      DeviceBuffer first(size_t(groups) * 8), inverse(size_t(shape.slices) * 8), counts(size_t(groups) * 8),
          y(size_t(shape.outer * groups * shape.inner) * 4);
      KILN_CUDA_OK(uniqueWrite(dx.get(), ElementType::kFloat32, shape, groups, workspace.get(), first.as<int64_t>(),
                               inverse.as<int64_t>(), counts.as<int64_t>(), y.get(), nullptr));
      EXPECT_EQ(first.read<int64_t>(), expected.firstOccurrence) << what;
      EXPECT_EQ(inverse.read<int64_t>(), expected.inverse) << what;
      EXPECT_EQ(counts.read<int64_t>(), expected.counts) << what;
      std::vector<float> expectedY;
      for (int64_t o = 0; o < shape.outer; ++o)
        for (int64_t f : expected.firstOccurrence)
          for (int64_t i = 0; i < shape.inner; ++i) expectedY.push_back(x[size_t((o * shape.slices + f) * shape.inner + i)]);
      EXPECT_EQ(y.read<float>(), expectedY) << what;
    }
  }
}

TEST(CudaUnique, WithoutOptionalOutputsStillWritesY) {
  KILN_REQUIRE_GPU();
  const std::vector<int32_t> x{5, 1, 5, 3, 1, 9};
  UniqueShape shape;
  shape.slices = 6;
  DeviceBuffer dx(x), workspace(uniqueWorkspaceBytes(shape)), groupCount(8), y(4 * 4);
  KILN_CUDA_OK(uniqueGroup(dx.get(), ElementType::kInt32, shape, false, workspace.get(), groupCount.as<int64_t>(), nullptr));
  ASSERT_EQ(readCount(groupCount), 4);
  KILN_CUDA_OK(uniqueWrite(dx.get(), ElementType::kInt32, shape, 4, workspace.get(), nullptr, nullptr, nullptr, y.get(),
                           nullptr));
  EXPECT_EQ(y.read<int32_t>(), (std::vector<int32_t>{5, 1, 3, 9}));
}

struct NmsCase {
  std::string name;
  int64_t batches, classes, boxes;
  bool centerPointBox;
  int64_t maxPerClass;  // < 0: input absent
  float iou;            // < 0: input absent
  float score;          // < -1e9: no threshold
};

TEST(CudaNonMaxSuppression, MatchesTheCpuKernel) {
  KILN_REQUIRE_GPU();
  const std::vector<NmsCase> cases{
      {"one box", 1, 1, 1, false, 3, 0.5f, -2e9f},
      {"two batches two classes", 2, 2, 40, false, 10, 0.4f, 0.2f},
      {"centre boxes", 1, 3, 33, true, 5, 0.3f, -2e9f},
      {"limit 1", 1, 2, 20, false, 1, 0.5f, -2e9f},
      {"no limit input", 1, 1, 10, false, -1, 0.5f, -2e9f},
      {"limit 0", 2, 1, 10, false, 0, 0.5f, -2e9f},
      {"no iou input", 1, 2, 25, false, 100, -1.0f, -2e9f},
      {"score above all", 1, 2, 12, false, 5, 0.5f, 2.0f},
      {"many boxes", 1, 1, 300, false, 300, 0.6f, 0.1f},
      {"no boxes", 2, 2, 0, false, 5, 0.5f, -2e9f},
  };
  for (const auto& c : cases) {
    std::mt19937 rng(uint32_t(c.boxes * 13 + c.classes));
    std::uniform_real_distribution<float> coordinate(0, 10), size(0.5f, 4), unit(0, 1);
    std::vector<float> boxes, scores;
    for (int64_t i = 0; i < c.batches * c.boxes; ++i) {
      const float x = coordinate(rng), y = coordinate(rng), w = size(rng), h = size(rng);
      if (c.centerPointBox) boxes.insert(boxes.end(), {x, y, w, h});
      else if (i % 2) boxes.insert(boxes.end(), {y + h, x + w, y, x});  // the other diagonal
      else boxes.insert(boxes.end(), {y, x, y + h, x + w});
    }
    for (int64_t i = 0; i < c.batches * c.classes * c.boxes; ++i)  // ties at tenths
      scores.push_back(std::round(unit(rng) * 10) / 10);
    cpu::NmsConfig config;
    config.batches = c.batches, config.classes = c.classes, config.boxes = c.boxes;
    config.centerPointBox = c.centerPointBox;
    config.maxPerClass = c.maxPerClass < 0 ? 0 : c.maxPerClass;
    config.iouThreshold = c.iou < 0 ? 0.0f : c.iou;
    config.hasScoreThreshold = c.score > -1e9f;
    config.scoreThreshold = c.score;
    std::vector<int64_t> expected;
    if (config.maxPerClass > 0)
      for (const auto& t : cpu::nonMaxSuppression(config, boxes.data(), scores.data())) expected.insert(expected.end(), t.begin(), t.end());

    NmsShape shape{c.batches, c.classes, c.boxes, c.centerPointBox};
    DeviceBuffer db(boxes), ds(scores), workspace(nmsWorkspaceBytes(shape)), count(8);
    DeviceBuffer limit(std::vector<int64_t>{c.maxPerClass}), iou(std::vector<float>{c.iou}),
        score(std::vector<float>{c.score});
    KILN_CUDA_OK(nmsSelect(db.as<float>(), ds.as<float>(), shape, c.maxPerClass < 0 ? nullptr : limit.as<int64_t>(),
                           c.iou < 0 ? nullptr : iou.as<float>(), config.hasScoreThreshold ? score.as<float>() : nullptr,
                           workspace.get(), count.as<int64_t>(), nullptr));
    const int64_t selected = readCount(count);
    ASSERT_EQ(selected * 3, int64_t(expected.size())) << c.name;
    DeviceBuffer out(expected.size() * 8);
    KILN_CUDA_OK(nmsWrite(shape, workspace.get(), out.as<int64_t>(), nullptr));
    EXPECT_EQ(out.read<int64_t>(), expected) << c.name;
  }
}

}  // namespace
