// The NCCL communicator as one rank (what a single-GPU machine can run; NCCL takes one rank a
// GPU): every collective layer through a CUDA engine on random inputs of odd sizes and inner axes,
// compared with the CPU engine on the in-process group; and the communicator's own calls on
// device buffers of every type, including those NCCL moves as bytes. Skipped with the reason
// without a GPU or NCCL; tests/gpu/nccl_ranks_test.cpp runs several GPUs.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/nccl_communicator.h>
#include <kiln/runtime.h>

#include "common/collective_cases.h"
#include "gpu/backend_agreement.h"
#include "gpu/collective_ranks.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <random>

#ifdef KILN_TESTS_HAVE_CUDA_RUNTIME
#include <cuda_runtime.h>

using namespace kiln;
using namespace kiln::test;

namespace {

// One rank on the current GPU for the whole file (joining costs a few hundred ms), its id passed
// by file. Never destroyed: finalizing NCCL while the process exits, after the CUDA runtime's own
// teardown may have run, is not safe.
std::shared_ptr<Communicator> singleRank() {
  static const auto* rank = [] {
    int device = 0;
    cudaGetDevice(&device);
    const std::string idFile =
        (std::filesystem::temp_directory_path() / ("kiln_nccl_single_" + std::to_string(getpid()))).string();
    return new std::shared_ptr<Communicator>(
        createNcclCommunicator(0, 1, NcclIdSource::file(idFile), device, std::chrono::seconds(60)));
  }();
  return *rank;
}

// Device memory for the direct calls.
struct DeviceBytes {
  void* data = nullptr;
  explicit DeviceBytes(size_t bytes) { EXPECT_EQ(cudaMalloc(&data, std::max<size_t>(bytes, 1)), cudaSuccess); }
  ~DeviceBytes() { cudaFree(data); }
};

std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = uint8_t(rng() | 1);  // never zero
  return bytes;
}

}  // namespace

TEST(NcclSingleRank, TheCommunicatorDescribesItself) {
  KILN_REQUIRE_NCCL();
  auto rank = singleRank();
  EXPECT_EQ(rank->rank(), 0);
  EXPECT_EQ(rank->size(), 1);
  EXPECT_TRUE(rank->exchangesDeviceBuffers());
  EXPECT_EQ(rank->timeout(), std::chrono::seconds(60));
  EXPECT_NE(rank->describe().find("NCCL rank 0 of 1"), std::string::npos) << rank->describe();
}

TEST(NcclSingleRank, EveryLayerMatchesTheCpuEngine) {
  KILN_REQUIRE_NCCL();
  for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32})
    for (const CollectiveCase& c : collectiveCases(1)) {
      const std::string what = c.describe(type, 1);
      SCOPED_TRACE(what);
      const Network net = collectiveNetwork(c.op, type, c.dims, 1, c.attrs);
      const HostTensor x = collectiveRankInput(type, c.dims, uint32_t(500 + c.dims.size() * 7 + int(type)));
      const HostTensor gpu = runRank(buildCudaPlan(net, type), singleRank(), x);
      const HostTensor cpu = runRank(Builder().build(net, BuilderConfig{}).plan, createInProcessCommunicators(1)[0], x);
      ASSERT_EQ(gpu.dtype(), cpu.dtype());
      EXPECT_EQ(collectiveValues(gpu), collectiveValues(cpu));
      expectCollectiveClose(collectiveValues(gpu), expectedCollectiveOutputs(c, {collectiveValues(x)})[0], type, what);
    }
}

TEST(NcclSingleRank, DirectCallsMoveEveryType) {
  KILN_REQUIRE_NCCL();
  auto rank = singleRank();
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  // int16, uint16 and bool have no NCCL type (moved as bytes); fp8 has one from NCCL 2.24.
  for (DataType type :
       {DataType::kInt16, DataType::kUInt16, DataType::kBool, DataType::kFloat8E4M3, DataType::kFloat8E5M2,
        DataType::kUInt8, DataType::kInt8, DataType::kFloat64, DataType::kInt64, DataType::kUInt64}) {
    SCOPED_TRACE(std::string(toString(type)));
    for (int64_t count : {int64_t(1), int64_t(37), int64_t(4099)}) {
      const size_t bytes = size_t(count) * byteSize(type);
      std::vector<uint8_t> in = randomBytes(bytes, uint32_t(count) + uint32_t(type));
      if (type == DataType::kBool)
        for (auto& b : in) b = b & 1;
      DeviceBytes send(bytes), recv(bytes);
      ASSERT_EQ(cudaMemcpy(send.data, in.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
      const std::vector<std::function<void()>> calls = {
          [&] { rank->allGather(send.data, recv.data, count, type, stream); },
          [&] { rank->broadcast(send.data, recv.data, count, type, 0, stream); },
          [&] { rank->allToAll(send.data, recv.data, count, type, stream); },
          [&] { rank->gather(send.data, recv.data, count, type, 0, stream); },
          [&] { rank->scatter(send.data, recv.data, count, type, 0, stream); },
      };
      for (size_t call = 0; call < calls.size(); ++call) {
        ASSERT_EQ(cudaMemset(recv.data, 0, bytes), cudaSuccess);
        calls[call]();
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);  // the copy below runs on another stream
        std::vector<uint8_t> out(bytes);
        ASSERT_EQ(cudaMemcpy(out.data(), recv.data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(out, in) << "call " << call << ", " << count << " values";
      }
    }
  }
  cudaStreamDestroy(stream);
}

TEST(NcclSingleRank, ReductionsRefuseTypesNcclCannotReduceAndTheGroupStaysUsable) {
  KILN_REQUIRE_NCCL();
  auto rank = singleRank();
  DeviceBytes buffer(64);
  try {
    rank->allReduce(buffer.data, buffer.data, 8, DataType::kBool, ReduceOp::kSum, nullptr);
    FAIL() << "bool is not reduced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("cannot reduce bool"), std::string::npos) << e.what();
  }
  const std::vector<float> values{1.5f, -2.0f, 3.25f};
  ASSERT_EQ(cudaMemcpy(buffer.data, values.data(), 12, cudaMemcpyHostToDevice), cudaSuccess);
  rank->allReduce(buffer.data, buffer.data, 3, DataType::kFloat32, ReduceOp::kMax, nullptr);  // in place
  std::vector<float> out(3);
  ASSERT_EQ(cudaMemcpy(out.data(), buffer.data, 12, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out, values);
  try {
    rank->broadcast(buffer.data, buffer.data, 3, DataType::kFloat32, 1, nullptr);
    FAIL() << "root 1 of a group of 1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("root 1"), std::string::npos) << e.what();
  }
}
#endif
