#include "nccl_communicator.h"

#include <kiln/error.h>

#include "nccl_types.h"

#include <cstring>
#include <optional>
#include <thread>

namespace kiln::nccl {

static_assert(sizeof(ncclUniqueId) == kUniqueIdBytes);
static_assert(int(NcclType::kInt8) == ncclInt8 && int(NcclType::kUint8) == ncclUint8 &&
              int(NcclType::kInt32) == ncclInt32 && int(NcclType::kUint32) == ncclUint32 &&
              int(NcclType::kInt64) == ncclInt64 && int(NcclType::kUint64) == ncclUint64 &&
              int(NcclType::kFloat16) == ncclFloat16 && int(NcclType::kFloat32) == ncclFloat32 &&
              int(NcclType::kFloat64) == ncclFloat64 && int(NcclType::kBfloat16) == ncclBfloat16);
static_assert(int(NcclReduction::kSum) == ncclSum && int(NcclReduction::kProd) == ncclProd &&
              int(NcclReduction::kMax) == ncclMax && int(NcclReduction::kMin) == ncclMin);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
static_assert(int(NcclType::kFloat8e4m3) == ncclFloat8e4m3 && int(NcclType::kFloat8e5m2) == ncclFloat8e5m2);
constexpr bool kFp8Types = true;
#else
constexpr bool kFp8Types = false;
#endif

namespace {

// The communicator's GPU as the calling thread's current device for one call; the previous one
// comes back afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device) : device_(device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = device;
    status_ = previous_ == device ? cudaSuccess : cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ != device_) cudaSetDevice(previous_);
  }
  cudaError_t status() const { return status_; }

 private:
  int device_, previous_ = 0;
  cudaError_t status_ = cudaSuccess;
};

// Spins briefly (collectives of small tensors finish in microseconds), then sleeps between polls.
void pause(int polls) {
  if (polls < 2000)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

std::string milliseconds(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

// Runs `body` (ncclSend / ncclRecv calls) as one NCCL group; the first error, else ncclGroupEnd's result.
template <class Body>
ncclResult_t grouped(Body&& body) {
  if (const ncclResult_t start = ncclGroupStart(); start != ncclSuccess) return start;
  const ncclResult_t inside = body();
  const ncclResult_t end = ncclGroupEnd();
  return inside != ncclSuccess ? inside : end;
}

}  // namespace

NcclCommunicator::NcclCommunicator(const CommunicatorSetup& setup)
    : rank_(setup.rank), size_(setup.worldSize), device_(setup.device), timeout_(setup.timeout) {
  const std::string what = describe();
  int devices = 0;
  const cudaError_t found = cudaGetDeviceCount(&devices);
  if (found != cudaSuccess || devices == 0) {
    cudaGetLastError();
    throw Error(ErrorCode::kUnsupported,
                what + ": no usable GPU here" +
                    (found != cudaSuccess ? std::string(" (") + cudaGetErrorString(found) + ")" : std::string()));
  }
  if (device_ >= devices)
    throw Error(ErrorCode::kInvalidArgument, what + ": this process sees " + std::to_string(devices) +
                                                 " GPU(s), numbered from 0 (CUDA_VISIBLE_DEVICES decides which)");
  // It stays current: the CUDA backend runs on the thread's current device.
  if (const cudaError_t set = cudaSetDevice(device_); set != cudaSuccess)
    throw Error(ErrorCode::kRuntimeError, what + ": cannot make the GPU current: " + cudaGetErrorString(set));
  ncclUniqueId id;
  std::memcpy(id.internal, setup.id.data(), sizeof id.internal);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // calls return at once; Kiln polls them against its deadlines
  const auto deadline = Clock::now() + timeout_;
  const ncclResult_t result = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
  if (!comm_) throw Error(ErrorCode::kRuntimeError, what + " could not join its group: " + ncclErrorText(result));
  settle(result, what, "joining its group", deadline,
         "not every rank joined: each rank must run with the same id and world size, on its own GPU (an id file left "
         "by an earlier run gives a stale id)");
  if (cudaEventCreateWithFlags(&before_, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventCreateWithFlags(&after_, cudaEventDisableTiming) != cudaSuccess) {
    if (before_) cudaEventDestroy(before_);
    std::lock_guard lock(mutex_);
    abortLocked();
    throw Error(ErrorCode::kRuntimeError, what + ": cannot create the CUDA events its collectives wait on");
  }
}

NcclCommunicator::~NcclCommunicator() {
  DeviceScope device(device_);
  if (comm_) {
    // Finalize flushes the communicator's work; it may need the other ranks, so it is bounded too.
    ncclResult_t result = ncclCommFinalize(comm_);
    const auto deadline = Clock::now() + timeout_;
    for (int polls = 0; result == ncclInProgress && Clock::now() < deadline; ++polls) {
      pause(polls);
      if (ncclCommGetAsyncError(comm_, &result) != ncclSuccess) result = ncclInternalError;
    }
    if (result == ncclSuccess)
      ncclCommDestroy(comm_);
    else
      ncclCommAbort(comm_);
  }
  if (before_) cudaEventDestroy(before_);
  if (after_) cudaEventDestroy(after_);
}

std::string NcclCommunicator::describe() const {
  return "NCCL rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " on GPU " + std::to_string(device_);
}

std::string NcclCommunicator::ncclErrorText(ncclResult_t result) const {
  std::string text = ncclGetErrorString(result);
  if (const char* last = ncclGetLastError(comm_); last && *last) text += std::string(" (") + last + ")";
  return text;
}

void NcclCommunicator::abortLocked() {
  if (!comm_) return;
  ncclCommAbort(comm_);  // blocking even for non-blocking communicators; stops their kernels
  comm_ = nullptr;
}

std::string NcclCommunicator::abortedBecause() {
  std::lock_guard lock(requestMutex_);
  return abortReason_;
}

void NcclCommunicator::fail(const std::string& message) {
  abortLocked();
  if (failure_.empty()) failure_ = message;
  throw Error(ErrorCode::kRuntimeError, message);
}

void NcclCommunicator::abort(const std::string& reason) {
  {
    std::lock_guard lock(requestMutex_);
    if (abortReason_.empty()) abortReason_ = "rank " + std::to_string(rank_) + " failed: " + reason;
  }
  abortRequested_ = true;
  // A collective in flight on another thread holds the lock: it sees the request and aborts.
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (lock.owns_lock()) takeAbortRequest();
}

void NcclCommunicator::takeAbortRequest() {
  if (!abortRequested_) return;
  {
    std::lock_guard lock(requestMutex_);
    if (failure_.empty()) failure_ = abortReason_;
  }
  DeviceScope device(device_);
  abortLocked();
}

void NcclCommunicator::settle(ncclResult_t result, const std::string& what, const std::string& doing,
                              Clock::time_point deadline, const std::string& timeoutHint) {
  for (int polls = 0; result == ncclInProgress; ++polls) {
    if (abortRequested_) fail(what + " stopped: " + abortedBecause());
    if (Clock::now() >= deadline)
      fail(what + " timed out after " + milliseconds(timeout_) + " " + doing + ": " + timeoutHint +
           "; the NCCL communicator was aborted");
    pause(polls);
    if (const ncclResult_t query = ncclCommGetAsyncError(comm_, &result); query != ncclSuccess) result = query;
  }
  if (result != ncclSuccess) fail(what + " failed " + doing + ": " + ncclErrorText(result));
}

void NcclCommunicator::waitForStream(const std::string& what) {
  std::optional<Clock::time_point> deadline;
  for (int polls = 0;; ++polls) {
    const cudaError_t done = cudaEventQuery(after_);
    if (done == cudaSuccess) return;
    if (done != cudaErrorNotReady) fail(what + " failed on the GPU: " + cudaGetErrorString(done));
    if (abortRequested_) fail(what + " stopped: " + abortedBecause());
    if (!deadline && cudaEventQuery(before_) == cudaSuccess) deadline = Clock::now() + timeout_;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess || (state != ncclSuccess && state != ncclInProgress))
      fail(what + " failed: " + ncclErrorText(state));
    if (deadline && Clock::now() >= *deadline)
      fail(what + " timed out after " + milliseconds(timeout_) +
           " waiting for the other ranks: a rank stalled, failed or ran other collectives; the NCCL communicator was "
           "aborted, so this rank's later collectives fail at once");
    pause(polls);
  }
}

template <class Launch>
void NcclCommunicator::run(const char* collective, int64_t count, DataType type, bool reduces, void* nativeStream,
                           Launch&& launch) {
  std::lock_guard lock(mutex_);
  takeAbortRequest();
  const uint64_t call = calls_;  // counted once it is enqueued: a call refused here never ran
  const std::string what = std::string("collective ") + collective + " (call " + std::to_string(call) + ", " +
                           std::to_string(count) + " " + std::string(toString(type)) + " values) on " + describe();
  if (!comm_) throw Error(ErrorCode::kRuntimeError, what + ": the group failed earlier: " + failure_);
  if (count < 0) throw Error(ErrorCode::kInvalidArgument, what + ": negative count");
  const NcclElements elements = elementsFor(type, reduces, kFp8Types, std::string("collective ") + collective);
  const auto stream = static_cast<cudaStream_t>(nativeStream);
  DeviceScope device(device_);
  if (device.status() != cudaSuccess)
    fail(what + ": cannot make its GPU current: " + cudaGetErrorString(device.status()));
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone)
    throw Error(ErrorCode::kUnsupported, what +
                                             ": cannot be captured in a CUDA graph: Kiln waits for each collective "
                                             "with a deadline, so that a stalled rank fails instead of hanging; "
                                             "run the engine without graph capture");
  ++calls_;
  if (const cudaError_t marked = cudaEventRecord(before_, stream); marked != cudaSuccess)
    fail(what + ": cannot record an event on its stream: " + cudaGetErrorString(marked));
  const auto deadline = Clock::now() + timeout_;
  settle(launch(size_t(count * elements.valuesPer), ncclDataType_t(elements.type)), what, "enqueueing it", deadline,
         "a rank stalled, failed or ran other collectives");
  if (const cudaError_t marked = cudaEventRecord(after_, stream); marked != cudaSuccess)
    fail(what + ": cannot record an event on its stream: " + cudaGetErrorString(marked));
  waitForStream(what);
}

void NcclCommunicator::checkRoot(int root, const char* collective) const {
  if (root < 0 || root >= size_)
    throw Error(ErrorCode::kInvalidArgument, std::string("collective ") + collective + ": root " +
                                                 std::to_string(root) + " is not a rank of a group of " +
                                                 std::to_string(size_));
}

void NcclCommunicator::allReduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op,
                                 void* stream) {
  run("AllReduce", count, type, true, stream, [&](size_t n, ncclDataType_t t) {
    return ncclAllReduce(send, recv, n, t, ncclRedOp_t(reductionFor(op)), comm_, cudaStream_t(stream));
  });
}

void NcclCommunicator::allGather(const void* send, void* recv, int64_t count, DataType type, void* stream) {
  run("AllGather", count, type, false, stream,
      [&](size_t n, ncclDataType_t t) { return ncclAllGather(send, recv, n, t, comm_, cudaStream_t(stream)); });
}

void NcclCommunicator::reduceScatter(const void* send, void* recv, int64_t count, DataType type, ReduceOp op,
                                     void* stream) {
  run("ReduceScatter", count, type, true, stream, [&](size_t n, ncclDataType_t t) {
    return ncclReduceScatter(send, recv, n, t, ncclRedOp_t(reductionFor(op)), comm_, cudaStream_t(stream));
  });
}

void NcclCommunicator::broadcast(const void* send, void* recv, int64_t count, DataType type, int root, void* stream) {
  checkRoot(root, "Broadcast");
  run("Broadcast", count, type, false, stream,
      [&](size_t n, ncclDataType_t t) { return ncclBroadcast(send, recv, n, t, root, comm_, cudaStream_t(stream)); });
}

void NcclCommunicator::reduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, int root,
                              void* stream) {
  checkRoot(root, "Reduce");
  run("Reduce", count, type, true, stream, [&](size_t n, ncclDataType_t t) {
    return ncclReduce(send, recv, n, t, ncclRedOp_t(reductionFor(op)), root, comm_, cudaStream_t(stream));
  });
}

// Gather, Scatter and AllToAll as grouped point-to-point calls (sending to oneself included),
// which every NCCL 2.7 and later has.
void NcclCommunicator::gather(const void* send, void* recv, int64_t count, DataType type, int root, void* stream) {
  checkRoot(root, "Gather");
  const size_t block = size_t(count) * byteSize(type);
  run("Gather", count, type, false, stream, [&](size_t n, ncclDataType_t t) {
    return grouped([&] {
      const auto s = cudaStream_t(stream);
      ncclResult_t result = ncclSend(send, n, t, root, comm_, s);
      for (int r = 0; rank_ == root && r < size_ && result == ncclSuccess; ++r)
        result = ncclRecv(static_cast<char*>(recv) + size_t(r) * block, n, t, r, comm_, s);
      return result;
    });
  });
}

void NcclCommunicator::scatter(const void* send, void* recv, int64_t count, DataType type, int root, void* stream) {
  checkRoot(root, "Scatter");
  const size_t block = size_t(count) * byteSize(type);
  run("Scatter", count, type, false, stream, [&](size_t n, ncclDataType_t t) {
    return grouped([&] {
      const auto s = cudaStream_t(stream);
      ncclResult_t result = ncclSuccess;
      for (int r = 0; rank_ == root && r < size_ && result == ncclSuccess; ++r)
        result = ncclSend(static_cast<const char*>(send) + size_t(r) * block, n, t, r, comm_, s);
      return result == ncclSuccess ? ncclRecv(recv, n, t, root, comm_, s) : result;
    });
  });
}

void NcclCommunicator::allToAll(const void* send, void* recv, int64_t count, DataType type, void* stream) {
  const size_t block = size_t(count) * byteSize(type);
  run("AllToAll", count, type, false, stream, [&](size_t n, ncclDataType_t t) {
    return grouped([&] {
      const auto s = cudaStream_t(stream);
      ncclResult_t result = ncclSuccess;
      for (int r = 0; r < size_ && result == ncclSuccess; ++r) {
        result = ncclSend(static_cast<const char*>(send) + size_t(r) * block, n, t, r, comm_, s);
        if (result == ncclSuccess) result = ncclRecv(static_cast<char*>(recv) + size_t(r) * block, n, t, r, comm_, s);
      }
      return result;
    });
  });
}

}  // namespace kiln::nccl
