#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::kernels {
namespace {

class ThreadPool {
 public:
  explicit ThreadPool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
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
      chunks_ = chunks;
      next_.store(0);
      pending_ = chunks;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    task_ = nullptr;
  }

 private:
  void work() {
    for (;;) {
      int64_t chunk = next_.fetch_add(1);
      if (chunk >= chunks_) return;
      (*task_)(chunk);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_all();
    }
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && task_); });
        if (stopping_) return;
        seen = generation_;
      }
      work();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex callMutex_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* task_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  int64_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
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
