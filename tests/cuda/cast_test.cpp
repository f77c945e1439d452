// launchCast on the GPU against the CPU's cast for every pair of the 15 element types, over
// values that exercise the rounding, saturation and NaN rules, aligned and unaligned.
#include "cuda/cast_test_values.h"
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/elementwise/cast.h>
#include <kernels/cuda/elementwise/cast.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;

namespace {

template <class Src, class Dst>
void checkCastPairOnGpu() {
  const auto sources = castSources<Src>();
  const Src* in = reinterpret_cast<const Src*>(sources.data());
  const int64_t n = int64_t(sources.size());
  std::vector<HostVectorElement<Dst>> wantStorage(sources.size());
  Dst* want = reinterpret_cast<Dst*>(wantStorage.data());
  if constexpr (std::is_same_v<Src, Dst>) std::copy(in, in + n, want);
  else kiln::kernels::cast<Src, Dst>(in, want, n);
  DeviceBuffer input(sources);
  for (int64_t offset : {int64_t(0), int64_t(1)}) {  // 1: the unpacked path
    if (offset >= n) continue;
    DeviceBuffer output(size_t(n) * sizeof(Dst));
    ASSERT_TRUE(runPoisoned(
        output,
        [&] {
          return launchCast(input.as<Src>() + offset, elementTypeOf<Src>(), output.as<Dst>() + offset,
                            elementTypeOf<Dst>(), n - offset, nullptr);
        },
        size_t(offset) * sizeof(Dst)));
    const std::vector<uint8_t> bytes = output.read<uint8_t>();
    for (int64_t i = offset; i < n; ++i) {
      Dst got;
      std::memcpy(&got, bytes.data() + i * sizeof(Dst), sizeof(Dst));
      ASSERT_TRUE(sameElement(got, want[i])) << toString(elementTypeOf<Src>()) << " -> " << toString(elementTypeOf<Dst>())
                                             << " of " << toDouble(in[i]) << ": got " << toDouble(got) << ", want "
                                             << toDouble(want[i]);
    }
  }
}

template <class Src>
void checkCastsFromOnGpu() {
#define KILN_CHECK_DST(Dst) checkCastPairOnGpu<Src, Dst>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK_DST)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK_DST)
  KILN_CHECK_DST(bool) KILN_CHECK_DST(Float8E4M3) KILN_CHECK_DST(Float8E5M2)
#undef KILN_CHECK_DST
}

}  // namespace

TEST(CudaCast, EveryPairMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK_SRC(Src) checkCastsFromOnGpu<Src>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK_SRC)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK_SRC)
  KILN_CHECK_SRC(bool) KILN_CHECK_SRC(Float8E4M3) KILN_CHECK_SRC(Float8E5M2)
#undef KILN_CHECK_SRC
}

TEST(CudaCast, EmptyAndInvalid) {
  KILN_REQUIRE_GPU();
  EXPECT_EQ(launchCast(nullptr, ElementType::kFloat32, nullptr, ElementType::kFloat16, 0, nullptr), cudaSuccess);
  DeviceBuffer buffer(16);
  EXPECT_EQ(launchCast(buffer.data(), ElementType(99), buffer.data(), ElementType::kFloat16, 1, nullptr),
            cudaErrorInvalidValue);
}
