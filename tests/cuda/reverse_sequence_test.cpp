// The CUDA ReverseSequence kernel (kernels/cuda/layout/reverse_sequence.h) against the CPU's
// (kernels/cpu/layout/rearrange.h): both batch axes, lengths of 0, 1 and the whole sequence, inner
// dims of several sizes, every element size; bit-exact.
#include "cuda/layout_test_support.h"

#include <kernels/cpu/layout/rearrange.h>
#include <kernels/cuda/layout/reverse_sequence.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

TEST(ReverseSequenceKernel, MatchesTheCpu) {
  KILN_REQUIRE_GPU();
  struct Case {
    int64_t time, batch, inner;
  };
  for (const Case& c : std::vector<Case>{{4, 4, 1}, {5, 3, 7}, {1, 2, 3}, {6, 1, 2}, {3, 0, 2}})
    for (bool batchMajor : {false, true})
      for (ElementType type : movementTypes()) {
        SCOPED_TRACE(std::string(toString(type)) + " time " + std::to_string(c.time) + " batch " +
                     std::to_string(c.batch) + " inner " + std::to_string(c.inner) + (batchMajor ? " batch-major" : ""));
        std::vector<int64_t> lengths;
        for (int64_t b = 0; b < c.batch; ++b) lengths.push_back((b * 3 + 1) % (c.time + 1));
        const int64_t count = c.time * c.batch * c.inner;
        const Bytes in = randomElements(type, count, 41);
        Bytes want(in.size());
        withStorage(elementBytes(type), [&](auto tag) {
          using T = decltype(tag);
          cpu::reverseSequence(reinterpret_cast<const T*>(in.data()), reinterpret_cast<T*>(want.data()), c.time,
                               c.batch, c.inner, lengths.data(), batchMajor);
        });
        DeviceBuffer dIn(in), dLengths(lengths), out(in.size());
        EXPECT_TRUE(writesEveryElement(
            out,
            [&] {
              return reverseSequence(dIn.get(), out.get(), c.time, c.batch, c.inner, dLengths.as<int64_t>(), batchMajor,
                                     type, nullptr);
            },
            want, elementBytes(type)));
      }
}

}  // namespace
