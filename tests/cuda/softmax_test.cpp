// The CUDA Softmax, LogSoftmax and Hardmax against the CPU kernel: every float type, lines that
// take a warp, a block or a thread each, ties, infinities and NaN.
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/softmax/softmax.h>
#include <kernels/cuda/softmax/softmax.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
using kiln::kernels::SoftmaxKind;

namespace {

struct Shape {
  int64_t outer, n, inner;
};

// (2, 12, 1) is opset 11's flattening of a [2, 3, 4] tensor at axis 1.
const std::vector<Shape> kShapes{{1, 1, 1},     {7, 33, 1}, {5, 1001, 1}, {3, 5000, 1}, {4, 17, 3},
                                 {2, 1, 5},     {1000, 10, 1}, {0, 5, 1}, {2, 12, 1},   {3, 1025, 1}};

template <class T>
void checkSoftmax(SoftmaxKind kind, const Shape& s) {
  const int64_t count = s.outer * s.n * s.inner;
  std::vector<T> in = randomValues<T>(count, -5, 5, uint32_t(count) + uint32_t(kind));
  for (int64_t i = 0; i < count; i += 3) in[size_t(i)] = fromDouble<T>(std::round(toDouble(in[size_t(i)])));  // ties
  for (int64_t i = 11; i < count; i += 53) in[size_t(i)] = fromDouble<T>(-INFINITY);
  if (count > 200) in[150] = fromDouble<T>(NAN);  // that line is NaN (Hardmax skips it)
  std::vector<T> want(static_cast<size_t>(count));
  kiln::kernels::softmax<T>(kind, in.data(), want.data(), s.outer, s.n, s.inner);
  DeviceBuffer input(in), output(size_t(count) * sizeof(T));
  ASSERT_TRUE(runPoisoned(output, [&] {
    return launchSoftmax(kind, input.data(), output.data(), s.outer, s.n, s.inner, elementTypeOf<T>(), nullptr);
  }));
  EXPECT_TRUE(closeTo(output.read<T>(), want))
      << toString(elementTypeOf<T>()) << " kind " << int(kind) << " [" << s.outer << "," << s.n << "," << s.inner << "]";
}

template <class T>
void checkEverySoftmax() {
  for (SoftmaxKind kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax, SoftmaxKind::kHardmax})
    for (const Shape& s : kShapes) checkSoftmax<T>(kind, s);
}

}  // namespace

TEST(CudaSoftmax, EveryKindTypeAndShapeMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkEverySoftmax<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

TEST(CudaSoftmax, HardmaxOfLinesWithoutAFiniteMaximumIsIndexZero) {
  KILN_REQUIRE_GPU();
  // Two contiguous lines of 3, or three strided lines of 2.
  const std::vector<float> in{-INFINITY, -INFINITY, -INFINITY, NAN, -INFINITY, NAN};
  for (int64_t inner : {int64_t(1), int64_t(3)}) {
    const int64_t outer = inner == 1 ? 2 : 1, n = inner == 1 ? 3 : 2;
    std::vector<float> want(in.size());
    kiln::kernels::softmax<float>(SoftmaxKind::kHardmax, in.data(), want.data(), outer, n, inner);
    DeviceBuffer input(in), output(in.size() * sizeof(float));
    ASSERT_TRUE(runPoisoned(output, [&] {
      return launchSoftmax(SoftmaxKind::kHardmax, input.data(), output.data(), outer, n, inner, ElementType::kFloat32,
                           nullptr);
    }));
    EXPECT_TRUE(closeTo(output.read<float>(), want, 0)) << inner;
  }
}

TEST(CudaSoftmax, RefusesIntegerTypes) {
  KILN_REQUIRE_GPU();
  DeviceBuffer buffer(64);
  EXPECT_EQ(launchSoftmax(SoftmaxKind::kSoftmax, buffer.data(), buffer.data(), 1, 4, 1, ElementType::kInt32, nullptr),
            cudaErrorInvalidValue);
}
