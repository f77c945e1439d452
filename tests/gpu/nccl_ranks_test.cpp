// The NCCL communicator across processes, one a GPU, as the ranks of a split model run: each test
// spawns this binary once per visible GPU (N >= 2; with fewer it is skipped, saying so), every
// process running NcclRankChild.Run as its rank. The collectives test runs every collective layer
// through each rank's CUDA engine (ids from the environment) and checks it against the result
// worked out from all ranks' inputs, which each rank derives from their seeds. The stall test
// (id by file) has the last rank join and then never call: the others must fail within the
// timeout, naming the collective and their rank, instead of hanging.
#include <kiln/error.h>
#include <kiln/nccl_communicator.h>

#include "common/collective_cases.h"
#include "gpu/backend_agreement.h"
#include "gpu/collective_ranks.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

extern char** environ;

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr int kMaxRanks = 8;
constexpr const char* kRole = "KILN_NCCL_TEST_ROLE";  // "collectives" or "stall"; set only in ranks
constexpr const char* kRank = "KILN_NCCL_TEST_RANK";
constexpr const char* kWorld = "KILN_NCCL_TEST_WORLD";
constexpr const char* kIdFile = "KILN_NCCL_TEST_ID_FILE";  // else the id is in KILN_NCCL_ID
constexpr const char* kTimeoutMs = "KILN_NCCL_TEST_TIMEOUT_MS";

std::string selfPath() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, size_t(n)) : std::string();
}

// Starts this binary running NcclRankChild.Run with `extra` added to the environment, its output
// in `log`.
pid_t spawnRank(const std::map<std::string, std::string>& extra, const std::string& log) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (!extra.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = selfPath(), filter = "--gtest_filter=NcclRankChild.Run";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int status = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return status == 0 ? pid : -1;
}

// Each rank's exit status (-1: killed after `limit`, or not started).
std::vector<int> waitForRanks(const std::vector<pid_t>& pids, std::chrono::seconds limit) {
  std::vector<int> codes(pids.size(), -1);
  std::vector<bool> done(pids.size(), false);
  for (size_t i = 0; i < pids.size(); ++i) done[i] = pids[i] <= 0;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        done[i] = true;
        codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      } else {
        all = false;
      }
    }
    if (all) return codes;
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (size_t i = 0; i < pids.size(); ++i)
    if (!done[i]) {
      kill(pids[i], SIGKILL);
      waitpid(pids[i], nullptr, 0);
    }
  return codes;
}

std::string tail(const std::string& path, size_t lines = 40) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string text;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) text += all[i] + "\n";
  return text;
}

// Runs `world` ranks in role `role` and expects every one to pass; prints a failing rank's log.
void runRanks(const std::string& role, int world, std::map<std::string, std::string> env, std::chrono::seconds limit) {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("kiln_nccl_ranks_" + std::to_string(getpid()) + "_" + role);
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  env[kRole] = role;
  env[kWorld] = std::to_string(world);
  // NVLink multicast stays off (these machines do not take it); NCCL's warnings go to the logs.
  if (!std::getenv("NCCL_NVLS_ENABLE")) env["NCCL_NVLS_ENABLE"] = "0";
  if (!std::getenv("NCCL_DEBUG")) env["NCCL_DEBUG"] = "WARN";
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (int r = 0; r < world; ++r) {
    env[kRank] = std::to_string(r);
    logs.push_back((folder / ("rank" + std::to_string(r) + ".log")).string());
    pids.push_back(spawnRank(env, logs.back()));
    EXPECT_GT(pids.back(), 0) << "could not start rank " << r;
  }
  const std::vector<int> codes = waitForRanks(pids, limit);
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(codes[size_t(r)], 0) << "rank " << r << " of " << world << " (" << role << ") "
                                   << (codes[size_t(r)] < 0 ? "did not finish within the limit or crashed" : "failed")
                                   << "; its log:\n"
                                   << tail(logs[size_t(r)]);
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(folder);
}

int ranksToRun() { return std::min(visibleGpus(), kMaxRanks); }

#define KILN_REQUIRE_TWO_GPUS()                                                                        \
  do {                                                                                                 \
    KILN_REQUIRE_NCCL();                                                                               \
    if (ranksToRun() < 2)                                                                              \
      GTEST_SKIP() << "multi-GPU NCCL test skipped: " << visibleGpus()                                 \
                   << " GPU visible; NCCL takes one rank a GPU, so several ranks need 2 or more GPUs"; \
  } while (0)

// --- what each rank runs ---

int envInt(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : -1;
}

// NCCL sums fp16 / bf16 in their own type, rounding at each of the world - 1 steps (the reference
// rounds once, which two ranks match exactly); values stay within 1.5 a rank.
void expectRankOutput(const std::vector<double>& got, const std::vector<double>& want, DataType type, bool sums,
                      int world, const std::string& what) {
  const bool narrow = type == DataType::kFloat16 || type == DataType::kBFloat16;
  if (!narrow || !sums || world <= 2) return expectCollectiveClose(got, want, type, what);
  const double halfUlp = type == DataType::kFloat16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  const double bound = (world - 1) * 1.5 * world * halfUlp * 2;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_LE(std::abs(got[i] - want[i]), bound) << what << " element " << i;
}

void runEveryLayer(const std::shared_ptr<Communicator>& comm) {
  const int rank = comm->rank(), world = comm->size();
  const auto cases = collectiveCases(world);
  for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32})
    for (size_t k = 0; k < cases.size(); ++k) {
      const CollectiveCase& c = cases[k];
      const std::string reduction =
          c.attrs.count("reduction") ? *c.attrs.at("reduction").get<std::string>() : std::string("sum");
      const bool reduces = c.op == "AllReduce" || c.op == "ReduceScatter" || c.op == "Reduce";
      if (reduces && reduction == "prod" && type != DataType::kFloat32 && type != DataType::kInt32) continue;
      const std::string what = c.describe(type, world) + ", rank " + std::to_string(rank);
      SCOPED_TRACE(what);
      std::vector<HostTensor> inputs;
      std::vector<std::vector<double>> values;
      for (int r = 0; r < world; ++r) {  // every rank's input, from its seed
        inputs.push_back(collectiveRankInput(type, c.dims, uint32_t(7000 + 101 * k + 13 * r + int(type))));
        values.push_back(collectiveValues(inputs.back()));
      }
      const HostTensor y = runRank(buildCudaPlan(collectiveNetwork(c.op, type, c.dims, world, c.attrs), type), comm,
                                   inputs[size_t(rank)]);
      expectRankOutput(collectiveValues(y), expectedCollectiveOutputs(c, values)[size_t(rank)], type,
                       reduces && reduction == "sum", world, what);
    }
}

void stallOrTimeOut(const std::shared_ptr<Communicator>& comm) {
  const int rank = comm->rank(), world = comm->size();
  if (rank == world - 1) {  // joined, and now never calls
    std::this_thread::sleep_for(3 * comm->timeout());
    return;
  }
  const auto plan =
      buildCudaPlan(collectiveNetwork("AllReduce", DataType::kFloat32, {1000}, world), DataType::kFloat32);
  const auto start = std::chrono::steady_clock::now();
  try {
    runRank(plan, comm, collectiveRankInput(DataType::kFloat32, {1000}, uint32_t(rank + 1)));
    FAIL() << "rank " << rank << ": a stalled rank must fail the collective";
  } catch (const Error& e) {
    const std::string message = e.what();
    const std::string timeout = "timed out after " + std::to_string(comm->timeout().count()) + " ms";
    EXPECT_NE(message.find("AllReduce_layer"), std::string::npos) << message;
    EXPECT_NE(message.find(timeout), std::string::npos) << message;
    EXPECT_NE(message.find("rank " + std::to_string(rank) + " of " + std::to_string(world)), std::string::npos)
        << message;
    std::cout << "rank " << rank << " failed as it should: " << message << std::endl;
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, comm->timeout() * 9 / 10);
  EXPECT_LT(elapsed, comm->timeout() + std::chrono::seconds(20)) << "the failure must come at the timeout";
}

}  // namespace

TEST(NcclRanks, EveryLayerOnEveryGpu) {
  KILN_REQUIRE_TWO_GPUS();
  // The id from the environment: this process makes it and lives while the ranks join.
  runRanks("collectives", ranksToRun(), {{kNcclIdVariable, createNcclUniqueIdHex()}, {kTimeoutMs, "60000"}},
           std::chrono::seconds(400));
}

TEST(NcclRanks, AStalledRankFailsTheOthersWithinTheTimeout) {
  KILN_REQUIRE_TWO_GPUS();
  const std::string idFile =
      (std::filesystem::temp_directory_path() / ("kiln_nccl_stall_id_" + std::to_string(getpid()))).string();
  runRanks("stall", ranksToRun(), {{kIdFile, idFile}, {kTimeoutMs, "10000"}}, std::chrono::seconds(120));
  EXPECT_FALSE(std::filesystem::exists(idFile)) << "rank 0 removes the id file once the ranks have joined";
}

// One rank of the tests above, in its own process; skipped when run directly.
TEST(NcclRankChild, Run) {
  const char* role = std::getenv(kRole);
  if (!role) GTEST_SKIP() << "runs only as a rank that the NcclRanks tests spawn";
  const int rank = envInt(kRank), world = envInt(kWorld);
  const auto timeout = std::chrono::milliseconds(envInt(kTimeoutMs));
  const char* idFile = std::getenv(kIdFile);
  const NcclIdSource id = idFile ? NcclIdSource::file(idFile) : NcclIdSource::environment();
  std::shared_ptr<Communicator> comm;
  try {
    comm = createNcclCommunicator(rank, world, id, rank, timeout);
  } catch (const Error& e) {
    FAIL() << "rank " << rank << " could not join: " << e.what();
  }
  std::cout << comm->describe() << " joined" << std::endl;
  if (std::string(role) == "collectives")
    runEveryLayer(comm);
  else
    stallOrTimeOut(comm);
}
