#pragma once
// Collective communication between the ranks of one multi-GPU (or multi-thread) run: what the
// collective layers (kiln.AllReduce, kiln.AllGather, ...) call through their execution context.
// One Communicator per rank; every rank of a group makes the same calls in the same order (the
// engines of a split model run the same collective layers in plan order). Buffers are flat: the
// layers lay their tensors out in rank-sized blocks first.
//
// A rank that never arrives must not hang the others: every call waits at most timeout(), then
// throws kiln::Error(kRuntimeError) naming the collective, the call, the rank, the timeout and,
// where the communicator can tell (in-process), the ranks missing.
// The NCCL communicator (kiln/nccl_communicator.h) implements this interface over device buffers
// on a CUDA stream; the in-process one below runs the CPU backend's ranks as threads of one
// process, so CI tests the layers' logic without GPUs.
#include <kiln/data_type.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class ReduceOp { kSum, kMax, kMin, kProd };
std::string_view toString(ReduceOp op);  // "sum", "max", "min", "prod"
// Parses a `reduction` attribute value; nullopt for anything else.
std::optional<ReduceOp> parseReduceOp(std::string_view name);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::chrono::milliseconds timeout() const = 0;
  virtual std::string describe() const = 0;  // "in-process rank 1 of 4"
  // Whether its buffers are device memory (NCCL) rather than host memory (the in-process group):
  // a backend's collective steps refuse a communicator of the other kind.
  virtual bool exchangesDeviceBuffers() const { return false; }

  // `stream` is the backend's native stream (a cudaStream_t) for device communicators; host ones
  // run at once and ignore it. Counts are elements of `type`.
  // recv[i] = op over ranks of send[i]; count elements each.
  virtual void allReduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op,
                         void* stream = nullptr) = 0;
  // recv = the ranks' sends one after another in rank order (size() * count elements).
  virtual void allGather(const void* send, void* recv, int64_t count, DataType type, void* stream = nullptr) = 0;
  // send holds size() blocks of count; recv = op over ranks of block rank().
  virtual void reduceScatter(const void* send, void* recv, int64_t count, DataType type, ReduceOp op,
                             void* stream = nullptr) = 0;
  // recv = root's send on every rank.
  virtual void broadcast(const void* send, void* recv, int64_t count, DataType type, int root,
                         void* stream = nullptr) = 0;
  // recv = op over ranks of send on the root; other ranks' recv is left as it is.
  virtual void reduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, int root,
                      void* stream = nullptr) = 0;
  // The root's recv = the ranks' sends in rank order (size() * count); other ranks' recv is left
  // as it is.
  virtual void gather(const void* send, void* recv, int64_t count, DataType type, int root, void* stream = nullptr) = 0;
  // The root's send holds size() blocks of count; every rank's recv = block rank() of it (the
  // other ranks' send is not read).
  virtual void scatter(const void* send, void* recv, int64_t count, DataType type, int root,
                       void* stream = nullptr) = 0;
  // send holds size() blocks of count; block j goes to rank j, whose recv block rank() it becomes.
  virtual void allToAll(const void* send, void* recv, int64_t count, DataType type, void* stream = nullptr) = 0;

  // Tells the other ranks this one failed (its run threw), so their collectives fail at once with
  // `reason` instead of waiting out the timeout. The group is unusable afterwards.
  virtual void abort(const std::string& reason) = 0;
};

// The data types allReduce / reduceScatter / reduce take (float32, float16, bfloat16, float64,
// int32, int64); the others move any fixed-size type.
bool reducible(DataType type);

// `worldSize` communicators of one in-process group, rank i at index i, each for one thread. Sums
// and products run in rank order (fp16 / bf16 widened to fp32 and rounded once; integers wrap), so
// results do not depend on which thread arrives first.
std::vector<std::shared_ptr<Communicator>> createInProcessCommunicators(
    int worldSize, std::chrono::milliseconds timeout = std::chrono::seconds(60));

// The communicators for `worldSize` ranks of engines built for `backend` (PlanInfo::backend), one
// rank a thread of this process: the in-process group for the CPU backends, whose collective steps
// read host memory. This is where a device communicator plugs in (NCCL for CUDA plans); a backend
// without one is refused with kiln::Error(kUnsupported) saying so.
std::vector<std::shared_ptr<Communicator>> createCommunicators(
    const std::string& backend, int worldSize, std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace kiln
