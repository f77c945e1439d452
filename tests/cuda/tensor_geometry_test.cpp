// Host-side checks of the CUDA kernels' index math (runs in CI, no GPU needed).
#include <kernels/cuda/common/tensor_geometry.h>

#include <gtest/gtest.h>

#include <stdexcept>

using namespace kiln::kernels::cuda;

namespace {

// The offset the naive loops give for broadcast input `inDims` at output linear index i.
int64_t naiveOffset(const std::vector<int64_t>& outDims, const std::vector<int64_t>& inDims, int64_t i) {
  std::vector<int64_t> coords(outDims.size());
  for (size_t d = outDims.size(); d-- > 0;) {
    coords[d] = i % outDims[d];
    i /= outDims[d];
  }
  int64_t offset = 0, stride = 1;
  for (size_t k = inDims.size(); k-- > 0;) {
    const size_t d = k + outDims.size() - inDims.size();
    if (inDims[k] != 1) offset += coords[d] * stride;
    stride *= inDims[k];
  }
  return offset;
}

}  // namespace

TEST(TensorGeometry, BroadcastOffsetsMatchNaiveLoops) {
  const std::vector<int64_t> out{3, 1, 5, 7};
  for (const std::vector<int64_t>& in : {std::vector<int64_t>{3, 1, 5, 7}, {5, 1}, {7}, {1}, {3, 1, 1, 7}, {}}) {
    StridedLayout layout = broadcastLayout(out, in);
    for (int64_t i = 0; i < 3 * 5 * 7; ++i) ASSERT_EQ(layout.offsetOf(i), naiveOffset(out, in, i)) << i;
  }
}

TEST(TensorGeometry, CoalescingKeepsOffsets) {
  const std::vector<int64_t> out{2, 3, 4, 5};
  StridedLayout dense = denseLayout(out), row = broadcastLayout(out, {4, 5}), col = broadcastLayout(out, {2, 3, 1, 1});
  StridedLayout denseC = dense, rowC = row, colC = col;
  coalesceDims({&denseC, &rowC, &colC});
  EXPECT_EQ(rowC.rank, 2);    // [6 (stride 0), 20 (stride 1)]
  EXPECT_EQ(denseC.rank, 2);  // merged alike
  for (int64_t i = 0; i < 120; ++i) {
    ASSERT_EQ(denseC.offsetOf(i), dense.offsetOf(i));
    ASSERT_EQ(rowC.offsetOf(i), row.offsetOf(i));
    ASSERT_EQ(colC.offsetOf(i), col.offsetOf(i));
  }
  StridedLayout alone = denseLayout({1, 6, 1});
  coalesceDims({&alone});
  EXPECT_EQ(alone.rank, 1);
  EXPECT_EQ(alone.offsetOf(5), 5);
}

TEST(TensorGeometry, RejectsDimsThatDoNotBroadcast) {
  EXPECT_THROW(broadcastLayout({3, 4}, {2, 4}), std::invalid_argument);
  EXPECT_THROW(broadcastLayout({4}, {2, 4}), std::invalid_argument);
  EXPECT_THROW(broadcastLayout(std::vector<int64_t>(9, 1), {1}), std::invalid_argument);
}
