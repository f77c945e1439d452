// The CUDA steps of the collective layers at world sizes 1-4 on one GPU: each rank a thread with
// its own CUDA engine, exchanging through StagedRanks (the in-process group, device buffers staged
// through the host), every rank's output checked against the result worked out from all ranks'
// inputs, as tests/runtime/collective_test.cpp does for the CPU kernels. This checks the steps'
// layouts (axes split into rank blocks and joined back) without NCCL; the host emulator runs it
// too (scripts/cuda_emulation/run_backend.sh 'CudaCollectives.*').
#include <kiln/error.h>
#include <kiln/runtime.h>

#include "common/collective_cases.h"
#include "gpu/backend_agreement.h"
#include "gpu/collective_ranks.h"

#include <gtest/gtest.h>

#include <thread>

using namespace kiln;
using namespace kiln::test;

namespace {

// Runs `plan` on `ranks` threads, rank r with inputs[r]; returns each rank's y (or rethrows the
// first rank's error).
std::vector<HostTensor> runStagedRanks(const std::vector<uint8_t>& plan, const std::vector<HostTensor>& inputs) {
  const int ranks = int(inputs.size());
  StagedRanks group(ranks, std::chrono::seconds(60));
  std::vector<HostTensor> outputs(static_cast<size_t>(ranks));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      auto turn = group.turn();
      try {
        outputs[size_t(r)] = runRank(plan, group.rank(r), inputs[size_t(r)]);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
        group.rank(r)->abort("its run failed");  // the others fail now instead of at the timeout
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return outputs;
}

void checkCase(const CollectiveCase& c, DataType type, int ranks) {
  SCOPED_TRACE(c.describe(type, ranks));
  checkCollectiveCase(c, type, ranks, uint32_t(2000 * ranks), buildCudaPlan, runStagedRanks);
}

}  // namespace

TEST(CudaCollectives, EveryLayerMatchesTheReferenceOnOneToFourRanks) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (int ranks = 1; ranks <= 4; ++ranks)
    for (const CollectiveCase& c : collectiveCases(ranks)) checkCase(c, DataType::kFloat32, ranks);
}

TEST(CudaCollectives, NarrowFloatsAndIntegers) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16, DataType::kInt32})
    for (int ranks : {2, 3})
      for (const CollectiveCase& c : collectiveCases(ranks)) {
        // fp16 / bf16 products of 3 ranks are too coarse to compare.
        if (c.attrs.count("reduction") && *c.attrs.at("reduction").get<std::string>() == "prod" &&
            type != DataType::kInt32)
          continue;
        checkCase(c, type, ranks);
      }
}

TEST(CudaCollectives, WithoutACommunicatorWorldSizeOneIsACopyAndMoreIsAnError) {
  KILN_REQUIRE_CUDA_BACKEND();
  const HostTensor x = collectiveRankInput(DataType::kFloat32, {3, 4, 5}, 9);
  const auto single = buildCudaPlan(
      collectiveNetwork("AllGather", DataType::kFloat32, {3, 4, 5}, 1, {{"axis", int64_t(1)}}), DataType::kFloat32);
  EXPECT_EQ(collectiveValues(runRank(single, nullptr, x)), collectiveValues(x));
  const auto pair = buildCudaPlan(collectiveNetwork("AllReduce", DataType::kFloat32, {3, 4, 5}, 2), DataType::kFloat32);
  try {
    runRank(pair, nullptr, x);
    FAIL() << "world_size 2 needs a communicator";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("AllReduce_layer"), std::string::npos) << message;
    EXPECT_NE(message.find("no communicator"), std::string::npos) << message;
    EXPECT_NE(message.find("createNcclCommunicator"), std::string::npos) << message;
  }
}

TEST(CudaCollectives, AHostCommunicatorIsRefused) {
  KILN_REQUIRE_CUDA_BACKEND();
  const auto plan = buildCudaPlan(collectiveNetwork("Broadcast", DataType::kFloat32, {6}, 2), DataType::kFloat32);
  try {
    runRank(plan, createInProcessCommunicators(2)[0], collectiveRankInput(DataType::kFloat32, {6}, 3));
    FAIL() << "device buffers must not go to a host communicator";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("Broadcast_layer"), std::string::npos) << message;
    EXPECT_NE(message.find("exchanges host buffers"), std::string::npos) << message;
  }
}

TEST(CudaCollectives, GraphCaptureIsRefusedNamingTheCollective) {
  KILN_REQUIRE_CUDA_BACKEND();
  const auto plan = buildCudaPlan(collectiveNetwork("AllReduce", DataType::kFloat32, {6}, 1), DataType::kFloat32);
  auto engine = Runtime().load(plan);
  EXPECT_FALSE(engine->report().graphCapturable());
  auto context = engine->createExecutionContext();
  context->setGraphCapture(true);
  try {
    context->run({{"x", collectiveRankInput(DataType::kFloat32, {6}, 4)}});
    FAIL() << "a collective waits on the host, so the engine cannot be captured";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("AllReduce_layer"), std::string::npos) << message;
    EXPECT_NE(message.find("collectives"), std::string::npos) << message;
  }
}
