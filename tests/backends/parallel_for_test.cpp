// kernels::parallelFor on OpenMP's threads: every index visited exactly once, work really spread
// over the threads, nested calls inline, an exception from any chunk reaching the caller, and
// regions started from several threads at once (two execution contexts) kept apart.
#include <kernels/cpu/common/parallel.h>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace kiln::kernels;

namespace {

// Runs the test body with `threads` kernel threads, restoring the count afterwards.
struct ThreadCount {
  explicit ThreadCount(int threads) : saved(cpuThreadCount()) { setCpuThreadCount(threads); }
  ~ThreadCount() { setCpuThreadCount(saved); }
  int saved;
};

TEST(ParallelFor, VisitsEveryIndexOnceAcrossThreads) {
  ThreadCount two(2);
  for (int64_t count : {1, 2, 7, 64, 1001}) {
    std::vector<std::atomic<int>> visits(static_cast<size_t>(count));
    std::mutex mutex;
    std::set<std::thread::id> workers;
    parallelFor(count, 1, [&](int64_t begin, int64_t end) {
      {
        std::lock_guard lock(mutex);
        workers.insert(std::this_thread::get_id());
      }
      for (int64_t i = begin; i < end; ++i) visits[size_t(i)]++;
      // Hold this chunk until the other thread has claimed one too (however late the scheduler runs
      // it on a busy machine), so the count of threads does not depend on timing; 10 s at most.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (count >= 7 && std::chrono::steady_clock::now() < deadline) {
        {
          std::lock_guard lock(mutex);
          if (workers.size() == 2) break;
        }
        std::this_thread::yield();
      }
    });
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(visits[size_t(i)].load(), 1) << "count " << count << " index " << i;
    if (count >= 7) EXPECT_EQ(workers.size(), 2u) << "count " << count;
  }
}

TEST(ParallelFor, GrainKeepsSmallWorkOnTheCaller) {
  ThreadCount two(2);
  std::set<std::thread::id> workers;
  parallelFor(100, 100, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100);
    workers.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(workers, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ParallelFor, NestedCallsRunInline) {
  ThreadCount two(2);
  std::atomic<int64_t> sum{0};
  parallelFor(8, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto outer = std::this_thread::get_id();
      parallelFor(10, 1, [&](int64_t b, int64_t e) {
        EXPECT_EQ(std::this_thread::get_id(), outer);
        sum += e - b;
      });
    }
  });
  EXPECT_EQ(sum.load(), 80);
}

TEST(ParallelFor, ExceptionFromAChunkReachesTheCaller) {
  ThreadCount two(2);
  for (int64_t failing : {0, 5, 15}) {
    try {
      parallelFor(16, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          if (i == failing) throw std::runtime_error("chunk " + std::to_string(i) + " failed");
      });
      FAIL() << "expected an exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "chunk " + std::to_string(failing) + " failed");
    }
  }
  // The threads are usable afterwards.
  std::atomic<int64_t> visited{0};
  parallelFor(32, 1, [&](int64_t begin, int64_t end) { visited += end - begin; });
  EXPECT_EQ(visited.load(), 32);
}

TEST(ParallelFor, RegionsFromSeveralThreadsAtOnce) {
  ThreadCount two(2);
  std::vector<std::thread> callers;
  std::vector<int64_t> sums(4, 0);
  for (size_t t = 0; t < sums.size(); ++t)
    callers.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        std::atomic<int64_t> sum{0};
        parallelFor(1000, 10, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) sum += i;
        });
        sums[t] += sum.load();
      }
    });
  for (auto& c : callers) c.join();
  for (int64_t s : sums) EXPECT_EQ(s, 50 * 999 * 1000 / 2);
}

}  // namespace
