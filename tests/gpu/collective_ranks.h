#pragma once
// What the GPU tests of the collective layers share: CUDA builds of the one-layer networks of
// common/collective_cases.h, a plan run as one rank, and StagedRanks, which runs CUDA engines of
// world size 2-4 as threads on one GPU (NCCL takes one rank a GPU).
#include <kiln/builder_config.h>
#include <kiln/communicator.h>
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::test {

// The CUDA build of `network` with every layer on the GPU, its activations in `type` where that is
// a float type (fp16 / bf16 allowed for it).
std::vector<uint8_t> buildCudaPlan(const Network& network, DataType type);

// Runs `plan` (input x, output y) as one rank of `comm`'s group.
HostTensor runRank(const std::vector<uint8_t>& plan, std::shared_ptr<Communicator> comm, const HostTensor& x);

// GPUs the CUDA runtime linked into the test sees: 0 under the host emulator
// (scripts/cuda_emulation), whose device memory is host memory.
int visibleGpus();

// Empty when NCCL communicators can be made here (the CUDA backend, NCCL and a GPU), else why not.
std::string whyNoNccl();

#define KILN_REQUIRE_NCCL()                                                                                            \
  do {                                                                                                                 \
    if (const std::string why = ::kiln::test::whyNoNccl(); !why.empty()) GTEST_SKIP() << "NCCL test skipped: " << why; \
  } while (0)

// N ranks of an in-process group for CUDA engines: each call copies the device buffers it reads
// to the host (after the step's stream has finished), runs the in-process collective and copies
// what it wrote back. The emulator runs one kernel at a time, so rank threads take turns on the
// GPU (turn()) except while they wait in a collective.
class StagedRanks {
 public:
  StagedRanks(int ranks, std::chrono::milliseconds timeout);
  std::shared_ptr<Communicator> rank(int r) const { return ranks_[size_t(r)]; }
  // Held by a rank thread while it runs; its collectives release it while they wait.
  std::unique_lock<std::mutex> turn() { return std::unique_lock(gpu_); }

 private:
  std::mutex gpu_;
  std::vector<std::shared_ptr<Communicator>> ranks_;
};

}  // namespace kiln::test
