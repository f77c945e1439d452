#include "gpu/collective_ranks.h"

#include "gpu/backend_agreement.h"

#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/nccl_communicator.h>
#include <kiln/runtime.h>

#include <cstring>
#include <functional>

#ifdef KILN_TESTS_HAVE_CUDA_RUNTIME
#include <cuda_runtime.h>
#endif

namespace kiln::test {

std::vector<uint8_t> buildCudaPlan(const Network& network, DataType type) {
  BuilderConfig config;
  config.backend = BackendKind::kCuda;
  config.strictDevice = true;
  config.allowTF32 = false;
  config.allowFP16 = type == DataType::kFloat16;
  config.allowBF16 = type == DataType::kBFloat16;
  return Builder().build(network, config).plan;
}

HostTensor runRank(const std::vector<uint8_t>& plan, std::shared_ptr<Communicator> comm, const HostTensor& x) {
  auto context = Runtime().load(plan)->createExecutionContext();
  context->setCommunicator(std::move(comm));
  return context->run({{"x", x}}).at("y");
}

int visibleGpus() {
#ifdef KILN_TESTS_HAVE_CUDA_RUNTIME
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

std::string whyNoNccl() {
  if (std::string why = whyNoCudaBackend(); !why.empty()) return why;
  if (std::string why = ncclUnavailableReason(); !why.empty()) return why;
  if (visibleGpus() == 0) return "no GPU is visible to the CUDA runtime";
  return "";
}

namespace {

// Moves bytes between a device buffer and the host: through the CUDA runtime after the stream's
// work, or as plain copies under the emulator.
struct Staging {
  bool realGpu = visibleGpus() > 0;

  std::vector<std::byte> toHost(const void* device, size_t bytes, void* stream) const {
    std::vector<std::byte> host(bytes);
    if (!bytes || !device) return host;
#ifdef KILN_TESTS_HAVE_CUDA_RUNTIME
    if (realGpu) {
      check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
      check(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
      return host;
    }
#endif
    std::memcpy(host.data(), device, bytes);
    return host;
  }
  // On the step's stream, waited for: cudaMemcpy from pageable memory may return before its DMA
  // lands, and the step's next kernel (on a non-blocking stream) read stale bytes on the H200.
  void toDevice(void* device, const std::vector<std::byte>& host, void* stream) const {
    if (host.empty()) return;
#ifdef KILN_TESTS_HAVE_CUDA_RUNTIME
    if (realGpu) {
      const auto s = static_cast<cudaStream_t>(stream);
      check(cudaMemcpyAsync(device, host.data(), host.size(), cudaMemcpyHostToDevice, s));
      return check(cudaStreamSynchronize(s));
    }
#endif
    std::memcpy(device, host.data(), host.size());
  }
#ifdef KILN_TESTS_HAVE_CUDA_RUNTIME
  static void check(cudaError_t status) {
    if (status != cudaSuccess)
      throw Error(ErrorCode::kRuntimeError, std::string("staging a collective: ") + cudaGetErrorString(status));
  }
#endif
};

class StagedCommunicator : public Communicator {
 public:
  StagedCommunicator(std::shared_ptr<Communicator> host, std::mutex& gpu) : host_(std::move(host)), gpu_(gpu) {}
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::chrono::milliseconds timeout() const override { return host_->timeout(); }
  std::string describe() const override { return "staged " + host_->describe(); }
  bool exchangesDeviceBuffers() const override { return true; }

  void allReduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, void* stream) override {
    exchange(send, count, recv, count, true, type, stream,
             [&](const void* s, void* r) { host_->allReduce(s, r, count, type, op); });
  }
  void allGather(const void* send, void* recv, int64_t count, DataType type, void* stream) override {
    exchange(send, count, recv, count * size(), true, type, stream,
             [&](const void* s, void* r) { host_->allGather(s, r, count, type); });
  }
  void reduceScatter(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, void* stream) override {
    exchange(send, count * size(), recv, count, true, type, stream,
             [&](const void* s, void* r) { host_->reduceScatter(s, r, count, type, op); });
  }
  void broadcast(const void* send, void* recv, int64_t count, DataType type, int root, void* stream) override {
    exchange(send, count, recv, count, true, type, stream,
             [&](const void* s, void* r) { host_->broadcast(s, r, count, type, root); });
  }
  void reduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, int root,
              void* stream) override {
    exchange(send, count, recv, count, rank() == root, type, stream,
             [&](const void* s, void* r) { host_->reduce(s, r, count, type, op, root); });
  }
  void gather(const void* send, void* recv, int64_t count, DataType type, int root, void* stream) override {
    exchange(send, count, recv, count * size(), rank() == root, type, stream,
             [&](const void* s, void* r) { host_->gather(s, r, count, type, root); });
  }
  void scatter(const void* send, void* recv, int64_t count, DataType type, int root, void* stream) override {
    exchange(rank() == root ? send : nullptr, count * size(), recv, count, true, type, stream,
             [&](const void* s, void* r) { host_->scatter(s, r, count, type, root); });
  }
  void allToAll(const void* send, void* recv, int64_t count, DataType type, void* stream) override {
    exchange(send, count * size(), recv, count * size(), true, type, stream,
             [&](const void* s, void* r) { host_->allToAll(s, r, count, type); });
  }
  void abort(const std::string& reason) override { host_->abort(reason); }

 private:
  // `sends` elements in, `receives` elements out (copied back only where `writes`).
  void exchange(const void* send, int64_t sends, void* recv, int64_t receives, bool writes, DataType type, void* stream,
                const std::function<void(const void*, void*)>& call) {
    const size_t bytes = byteSize(type);
    const std::vector<std::byte> in = staging_.toHost(send, size_t(sends) * bytes, stream);
    std::vector<std::byte> out = staging_.toHost(recv, size_t(receives) * bytes, stream);
    gpu_.unlock();  // other ranks launch while this one waits
    try {
      call(send ? in.data() : nullptr, out.data());
    } catch (...) {
      gpu_.lock();
      throw;
    }
    gpu_.lock();
    if (writes) staging_.toDevice(recv, out, stream);
  }

  std::shared_ptr<Communicator> host_;
  std::mutex& gpu_;
  Staging staging_;
};

}  // namespace

StagedRanks::StagedRanks(int ranks, std::chrono::milliseconds timeout) {
  for (auto& host : createInProcessCommunicators(ranks, timeout))
    ranks_.push_back(std::make_shared<StagedCommunicator>(host, gpu_));
}

}  // namespace kiln::test
