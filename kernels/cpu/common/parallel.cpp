#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::kernels {
namespace {

// Waits briefly by spinning before sleeping: a layer runs several parallel regions back to back,
// and waking a sleeping thread (futex) costs tens of microseconds each time. The spin is bounded,
// so a loaded machine loses little.
constexpr auto kSpinTime = std::chrono::microseconds(50);

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpinTime has passed; returns done().
template <class Done>
bool spinUntil(Done&& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpuRelax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return done();
  }
}

class ThreadPool {
 public:
  explicit ThreadPool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_.store(true);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int workers() const { return int(threads_.size()); }

  // Runs task(chunk) for chunk in [0, chunks); the caller takes part and returns when all are done.
  void run(int64_t chunks, const std::function<void(int64_t)>& task) {
    std::unique_lock<std::mutex> callerLock(callMutex_);  // one parallel region at a time
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      pending_.store(chunks);
      work_.store(uint64_t(chunks) << 32);  // publishes task_ to the threads that claim a chunk
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    work();
    if (!spinUntil([this] { return pending_.load() == 0; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_.load() == 0; });
    }
    task_ = nullptr;
  }

 private:
  // Claims chunks until none is left. The chunk count travels in the same word as the index, so a
  // thread still finishing an earlier region never reads a count or task of a newer one unclaimed.
  void work() {
    for (;;) {
      const uint64_t claim = work_.fetch_add(1);
      const int64_t chunk = int64_t(claim & 0xFFFFFFFFu), count = int64_t(claim >> 32);
      if (chunk >= count) return;
      (*task_)(chunk);
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);  // the caller may be between its check and its wait
        done_.notify_all();
      }
    }
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      auto ready = [&] { return stopping_.load() || generation_.load() != seen; };
      if (!spinUntil(ready)) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, ready);
      }
      if (stopping_.load()) return;
      seen = generation_.load();
      work();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex callMutex_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* task_ = nullptr;
  std::atomic<uint64_t> work_{0};  // chunk count << 32 | next chunk index
  std::atomic<int64_t> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
};

std::atomic<int> gThreads{0};
thread_local bool tInsideParallel = false;

int defaultThreads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& pool() {
  static ThreadPool instance(std::max(0, cpuThreadCount() - 1));
  return instance;
}

}  // namespace

int cpuThreadCount() {
  int n = gThreads.load();
  if (n == 0) {
    n = defaultThreads();
    gThreads.store(n);
  }
  return n;
}

void setCpuThreadCount(int threads) { gThreads.store(std::max(1, threads)); }

void parallelFor(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (count <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int threads = cpuThreadCount();
  int64_t maxChunks = (count + grain - 1) / grain;
  if (threads <= 1 || maxChunks <= 1 || tInsideParallel) {
    fn(0, count);
    return;
  }
  int64_t chunks = std::min<int64_t>(maxChunks, int64_t(threads) * 4);
  int64_t per = (count + chunks - 1) / chunks;
  chunks = (count + per - 1) / per;
  pool().run(chunks, [&](int64_t c) {
    tInsideParallel = true;
    int64_t b = c * per;
    fn(b, std::min(count, b + per));
    tInsideParallel = false;
  });
}

}  // namespace kiln::kernels
