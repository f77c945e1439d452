#pragma once
// The NCCL communicator (kiln/nccl_communicator.h). Its NCCL communicator is non-blocking
// (blocking = 0), so joining and every call return at once and are polled here against a
// deadline; each collective then waits for its stream's work with a deadline as well (an event
// after it, queried in a loop). A timeout or an NCCL error aborts the communicator
// (ncclCommAbort, which also stops its kernels) and throws kiln::Error naming the collective, the
// call number, the rank and the timeout; every later call fails at once with that reason. The host
// therefore waits at each collective, which also keeps its stream out of CUDA graph capture.
#include <kiln/communicator.h>

#include "../runtime/nccl_module.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace kiln::nccl {

class NcclCommunicator final : public Communicator {
 public:
  // Makes setup.device the calling thread's current device and joins the group; returns once
  // every rank has joined.
  explicit NcclCommunicator(const CommunicatorSetup& setup);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::chrono::milliseconds timeout() const override { return timeout_; }
  std::string describe() const override;
  bool exchangesDeviceBuffers() const override { return true; }

  void allReduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, void* stream) override;
  void allGather(const void* send, void* recv, int64_t count, DataType type, void* stream) override;
  void reduceScatter(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, void* stream) override;
  void broadcast(const void* send, void* recv, int64_t count, DataType type, int root, void* stream) override;
  void reduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, int root, void* stream) override;
  void gather(const void* send, void* recv, int64_t count, DataType type, int root, void* stream) override;
  void scatter(const void* send, void* recv, int64_t count, DataType type, int root, void* stream) override;
  void allToAll(const void* send, void* recv, int64_t count, DataType type, void* stream) override;
  void abort(const std::string& reason) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Call;  // one collective's name, sizes and NCCL type
  // Enqueues one collective (`launch(elements, type)` makes the NCCL call or group) on `stream`
  // and waits for it; throws naming the call.
  template <class Launch>
  void run(const char* collective, int64_t count, DataType type, bool reduces, void* stream, Launch&& launch);
  // Polls the communicator while `result` is ncclInProgress, up to `deadline`.
  void settle(ncclResult_t result, const std::string& what, const std::string& doing, Clock::time_point deadline,
              const std::string& timeoutHint);
  // Waits for the event after the collective; the deadline starts once the work queued before it
  // has finished, so the timeout bounds the exchange, not the layers before it.
  void waitForStream(const std::string& what);
  // Aborts the communicator, remembers `message` for later calls, throws it.
  [[noreturn]] void fail(const std::string& message);
  void abortLocked();  // ncclCommAbort, with mutex_ held
  // Carries out abort() asked for while a collective held mutex_ (mutex_ held).
  void takeAbortRequest();
  std::string abortedBecause();
  std::string ncclErrorText(ncclResult_t result) const;
  void checkRoot(int root, const char* collective) const;

  const int rank_, size_, device_;
  const std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;  // null once aborted
  cudaEvent_t before_ = nullptr, after_ = nullptr;
  std::mutex mutex_;  // held by each call: one NCCL call at a time on the communicator
  uint64_t calls_ = 0;
  std::string failure_;  // why the group is unusable; set once
  // abort() from another thread while a collective waits: the waiting call aborts.
  std::atomic<bool> abortRequested_{false};
  std::mutex requestMutex_;
  std::string abortReason_;
};

}  // namespace kiln::nccl
