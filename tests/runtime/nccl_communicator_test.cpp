// What the NCCL communicator does without a GPU (and without NCCL): the unique id's hex form, the
// id file handshake (rank 0 writes it atomically, the others wait for it within the timeout), the
// environment variable, the mapping of Kiln's types and reductions onto NCCL's, and the factory's
// argument errors. tests/gpu/nccl_*_test.cpp run the communicator itself.
#include <kiln/error.h>
#include <kiln/nccl_communicator.h>

#include "nccl/nccl_types.h"
#include "runtime/nccl_unique_id.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

using namespace kiln;
using namespace kiln::nccl;

namespace {

UniqueId randomId(uint32_t seed) {
  std::mt19937 rng(seed);
  UniqueId id{};
  for (auto& byte : id) byte = uint8_t(rng());
  return id;
}

// A fresh folder for one test's files, removed afterwards.
struct TempFolder {
  std::filesystem::path path;
  TempFolder() {
    path = std::filesystem::temp_directory_path() / ("kiln_nccl_" + std::to_string(getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempFolder() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(NcclUniqueId, HexRoundTripsEveryByte) {
  const UniqueId id = randomId(1);
  const std::string hex = toHex(id);
  EXPECT_EQ(hex.size(), 256u);
  EXPECT_EQ(fromHex(hex, "test"), id);
  std::string upper = hex;
  for (char& c : upper) c = char(std::toupper(c));
  EXPECT_EQ(fromHex("  " + upper + "\n", "test"), id);  // either case, surrounding space ignored
}

TEST(NcclUniqueId, MalformedHexNamesWhereItCameFrom) {
  std::string e = errorOf([] { fromHex("abc", "environment variable X"); });
  EXPECT_TRUE(contains(e, "environment variable X") && contains(e, "256 hex digits") && contains(e, "got 3")) << e;
  std::string bad = toHex(randomId(2));
  bad[17] = 'g';
  e = errorOf([&] { fromHex(bad, "file f"); });
  EXPECT_TRUE(contains(e, "file f")) << e;
}

TEST(NcclUniqueId, TheIdFileIsWrittenWholeAndReadByAWaitingRank) {
  TempFolder folder;
  const std::string path = folder.file("id");
  const UniqueId id = randomId(3);
  // Rank 1 starts first and waits; rank 0 publishes 150 ms later.
  std::thread rank0([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    publishIdFile(path, id);
  });
  const auto start = std::chrono::steady_clock::now();
  const UniqueId read = waitForIdFile(path, std::chrono::seconds(10), 1);
  rank0.join();
  EXPECT_EQ(read, id);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // Only the id file is left: the temporary one was renamed into place.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(folder.path), std::filesystem::directory_iterator()), 1);
  // Publishing again replaces it whole.
  const UniqueId next = randomId(4);
  publishIdFile(path, next);
  EXPECT_EQ(waitForIdFile(path, std::chrono::milliseconds(100), 2), next);
}

TEST(NcclUniqueId, AMissingIdFileTimesOutNamingThePathTheRankAndTheTimeout) {
  TempFolder folder;
  const std::string path = folder.file("never");
  const auto start = std::chrono::steady_clock::now();
  const std::string e = errorOf([&] { waitForIdFile(path, std::chrono::milliseconds(200), 3); });
  EXPECT_TRUE(contains(e, "rank 3") && contains(e, "200 ms") && contains(e, path) && contains(e, "rank 0")) << e;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(NcclUniqueId, AFileThatIsNotAnIdFailsAfterTheTimeout) {
  TempFolder folder;
  const std::string path = folder.file("garbage");
  std::ofstream(path) << "not an id\n";
  const std::string e = errorOf([&] { waitForIdFile(path, std::chrono::milliseconds(100), 1); });
  EXPECT_TRUE(contains(e, "does not hold an id") && contains(e, path)) << e;
}

TEST(NcclUniqueId, AnUnwritableFolderIsAnIoError) {
  try {
    publishIdFile("/nonexistent-kiln-folder/id", randomId(5));
    FAIL() << "no folder to write in";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIoError);
    EXPECT_TRUE(contains(e.what(), "/nonexistent-kiln-folder/id")) << e.what();
  }
}

TEST(NcclUniqueId, TheEnvironmentVariableHoldsTheHex) {
  const UniqueId id = randomId(6);
  setenv("KILN_TEST_NCCL_ID", toHex(id).c_str(), 1);
  EXPECT_EQ(idFromEnvironment("KILN_TEST_NCCL_ID"), id);
  unsetenv("KILN_TEST_NCCL_ID");
  const std::string e = errorOf([] { idFromEnvironment("KILN_TEST_NCCL_ID"); });
  EXPECT_TRUE(contains(e, "KILN_TEST_NCCL_ID is not set") && contains(e, "createNcclUniqueIdHex")) << e;
}

TEST(NcclTypes, EveryKilnTypeMapsOntoNcclOrIsRefusedClearly) {
  const std::vector<std::pair<DataType, NcclType>> native = {
      {DataType::kFloat32, NcclType::kFloat32},   {DataType::kFloat16, NcclType::kFloat16},
      {DataType::kBFloat16, NcclType::kBfloat16}, {DataType::kFloat64, NcclType::kFloat64},
      {DataType::kInt8, NcclType::kInt8},         {DataType::kUInt8, NcclType::kUint8},
      {DataType::kInt32, NcclType::kInt32},       {DataType::kUInt32, NcclType::kUint32},
      {DataType::kInt64, NcclType::kInt64},       {DataType::kUInt64, NcclType::kUint64},
  };
  for (const auto& [type, ncclType] : native)
    for (bool reduces : {false, true}) {
      const NcclElements e = elementsFor(type, reduces, false, "AllReduce");
      EXPECT_EQ(e.type, ncclType) << toString(type);
      EXPECT_EQ(e.valuesPer, 1) << toString(type);
    }
  // fp8: NCCL's own types where it has them, else moved as bytes and never reduced.
  EXPECT_EQ(elementsFor(DataType::kFloat8E4M3, true, true, "AllReduce").type, NcclType::kFloat8e4m3);
  EXPECT_EQ(elementsFor(DataType::kFloat8E5M2, false, true, "AllGather").type, NcclType::kFloat8e5m2);
  EXPECT_EQ(elementsFor(DataType::kFloat8E4M3, false, false, "AllGather").type, NcclType::kUint8);
  EXPECT_TRUE(contains(errorOf([] { elementsFor(DataType::kFloat8E5M2, true, false, "collective Reduce"); }),
                       "cannot reduce float8e5m2"));
  // Types NCCL lacks move as bytes: int16 as 2 bytes a value, bool as 1.
  const NcclElements int16 = elementsFor(DataType::kInt16, false, true, "AllToAll");
  EXPECT_EQ(int16.type, NcclType::kUint8);
  EXPECT_EQ(int16.valuesPer, 2);
  EXPECT_EQ(elementsFor(DataType::kBool, false, true, "Broadcast").valuesPer, 1);
  // ... but are not reduced, and strings never travel.
  std::string e = errorOf([] { elementsFor(DataType::kUInt16, true, true, "collective ReduceScatter"); });
  EXPECT_TRUE(contains(e, "collective ReduceScatter cannot reduce uint16") && contains(e, "float32")) << e;
  e = errorOf([] { elementsFor(DataType::kString, false, true, "collective AllGather"); });
  EXPECT_TRUE(contains(e, "collective AllGather cannot move string")) << e;
  try {
    elementsFor(DataType::kBool, true, true, "collective AllReduce");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnsupported);
  }
}

TEST(NcclTypes, Reductions) {
  EXPECT_EQ(reductionFor(ReduceOp::kSum), NcclReduction::kSum);
  EXPECT_EQ(reductionFor(ReduceOp::kProd), NcclReduction::kProd);
  EXPECT_EQ(reductionFor(ReduceOp::kMax), NcclReduction::kMax);
  EXPECT_EQ(reductionFor(ReduceOp::kMin), NcclReduction::kMin);
}

TEST(NcclCommunicatorFactory, BadArgumentsAreRefusedBeforeAnythingIsLoaded) {
  const auto id = NcclIdSource::environment("KILN_TEST_UNSET_ID");
  auto code = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  EXPECT_EQ(code([&] { createNcclCommunicator(2, 2, id, 0); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { createNcclCommunicator(-1, 2, id, 0); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { createNcclCommunicator(0, 0, id, 0); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { createNcclCommunicator(0, 1, id, -1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { createNcclCommunicator(0, 1, id, 0, std::chrono::milliseconds(0)); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { createNcclCommunicator(0, 1, NcclIdSource::file(""), 0); }), ErrorCode::kInvalidArgument);
  const std::string e = errorOf([&] { createNcclCommunicator(0, 2, id, 0); });
  EXPECT_TRUE(contains(e, "rank 0 of 2") || contains(e, "KILN_TEST_UNSET_ID") || contains(e, "NCCL")) << e;
}

TEST(NcclCommunicatorFactory, WithoutNcclTheErrorSaysWhy) {
  const std::string why = ncclUnavailableReason();
  if (why.empty()) GTEST_SKIP() << "NCCL loads here; tests/gpu runs it";
  EXPECT_TRUE(contains(why, "NCCL")) << why;
  try {
    createNcclCommunicator(0, 1, NcclIdSource::environment(), 0);
    FAIL() << "no NCCL";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_EQ(std::string(e.what()), why);
  }
}

TEST(NcclCommunicatorFactory, RankZeroLeavesNoIdFileBehind) {
  // Whether joining works here (a GPU, NCCL) or fails (neither), rank 0's id file is gone
  // afterwards, so a later run with the same path never reads this run's id.
  TempFolder folder;
  const std::string path = folder.file("id");
  const std::string outcome =
      errorOf([&] { createNcclCommunicator(0, 1, NcclIdSource::file(path), 0, std::chrono::seconds(20)); });
  EXPECT_FALSE(std::filesystem::exists(path)) << outcome;
}
