// The stream hold the tactic timing puts before each timed region: the work behind it waits at
// least as long as asked (the event after it completes no sooner), and a hold of zero enqueues
// nothing.
#include "cuda/cuda_test_util.h"

#include <kernels/cuda/timing/hold_stream.h>

using namespace kiln::kernels::cuda;

namespace {

// Milliseconds between events around a hold of `microseconds` on a new stream.
float heldMilliseconds(uint64_t microseconds) {
  cudaStream_t stream = nullptr;
  cudaEvent_t begin = nullptr, end = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cudaEventCreate(&begin), cudaSuccess);
  EXPECT_EQ(cudaEventCreate(&end), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(begin, stream), cudaSuccess);
  EXPECT_EQ(holdStream(microseconds * 1000, stream), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(end, stream), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(end), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, begin, end), cudaSuccess);
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  cudaStreamDestroy(stream);
  return ms;
}

}  // namespace

TEST(CudaHoldStream, HoldsTheStreamAtLeastAsLongAsAsked) {
  KILN_REQUIRE_GPU();
#ifdef KILN_CUDA_EMULATION
  GTEST_SKIP() << "the host emulator has no device clock to wait on";
#endif
  for (uint64_t microseconds : {50u, 300u, 2000u}) {
    const float ms = heldMilliseconds(microseconds);
    EXPECT_GE(ms, 0.95f * float(microseconds) / 1000) << microseconds << " us asked";  // events resolve ~0.5 us
  }
}

TEST(CudaHoldStream, ZeroHoldsNothing) {
  KILN_REQUIRE_GPU();
#ifdef KILN_CUDA_EMULATION
  GTEST_SKIP() << "the host emulator has no device clock to wait on";
#endif
  EXPECT_EQ(holdStream(0, nullptr), cudaSuccess);          // nothing launched: no stream needed
  EXPECT_LT(heldMilliseconds(0), heldMilliseconds(2000));  // no wait, against a 2 ms one
}
