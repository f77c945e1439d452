#include "parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <thread>

namespace kiln::kernels {
namespace {

std::atomic<int> gThreads{0};
thread_local bool tInsideParallel = false;

int defaultThreads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
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

// The regions run on OpenMP's threads, the same ones oneDNN's convolutions use: one set of
// workers for the whole engine, instead of two pools taking turns at spinning on the same cores.
// Chunks are claimed dynamically (a few per thread) so uneven chunks balance out.
void parallelFor(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (count <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int threads = cpuThreadCount();
  const int64_t maxChunks = (count + grain - 1) / grain;
  if (threads <= 1 || maxChunks <= 1 || tInsideParallel) {
    fn(0, count);
    return;
  }
  int64_t chunks = std::min<int64_t>(maxChunks, int64_t(threads) * 4);
  const int64_t per = (count + chunks - 1) / chunks;
  chunks = (count + per - 1) / per;
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
#pragma omp parallel num_threads(threads)
  {
    tInsideParallel = true;
    for (int64_t c; !failed.load(std::memory_order_relaxed) && (c = next.fetch_add(1)) < chunks;) {
      try {
        const int64_t begin = c * per;
        fn(begin, std::min(count, begin + per));
      } catch (...) {  // an exception must not leave an OpenMP region: the caller rethrows it
        if (!failed.exchange(true)) failure = std::current_exception();
      }
    }
    tInsideParallel = false;
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kiln::kernels
