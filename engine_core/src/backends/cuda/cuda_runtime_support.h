#pragma once
// The CUDA backend's device side: checked CUDA calls, a caching device allocator, streams (owned
// or the caller's) and events, and the element type of each DataType.
#include <kiln/data_type.h>

#include "../backend.h"

#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

// Throws kiln::Error(kRuntimeError) "<what>: <CUDA's name and text>" unless status is cudaSuccess;
// out-of-memory says how many bytes and what to do.
void check(cudaError_t status, const std::string& what);

// The kernels' element type of a DataType (nullopt: strings and undefined).
std::optional<kernels::cuda::ElementType> elementTypeOf(DataType type);

// Device memory in 256-byte aligned blocks. Freed blocks are kept for the next allocation of the
// same rounded size, so contexts and timing runs made one after another do not call cudaMalloc
// again; released when the backend goes.
class CudaAllocator : public DeviceAllocator {
 public:
  ~CudaAllocator() override;
  void* allocate(uint64_t bytes, uint64_t alignment) override;
  void free(void* memory) override;

 private:
  std::mutex mutex_;
  std::map<void*, uint64_t> live_;                 // block -> rounded size
  std::multimap<uint64_t, void*> cached_;          // rounded size -> free block
};

class CudaStream : public Stream {
 public:
  // Owns a new non-blocking stream, or wraps `external` (the caller's) without owning it.
  explicit CudaStream(cudaStream_t external = nullptr);
  ~CudaStream() override;
  void copy(void* destination, const void* source, uint64_t bytes) override;
  void wait(const Event& event) override;
  void synchronize() override;
  void holdBack(double microseconds) override;
  void* native() override { return stream_; }
  cudaStream_t handle() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  bool owned_ = false;
};

class CudaEvent : public Event {
 public:
  CudaEvent();
  ~CudaEvent() override;
  void record(Stream& stream) override;
  void synchronize() override;
  double millisecondsSince(const Event& start) const override;
  cudaEvent_t handle() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
  bool recorded_ = false;
};

cudaStream_t nativeStream(Stream& stream);

// A device copy of host data, freed with it (weights, made at instantiate()).
class DeviceCopy {
 public:
  DeviceCopy() = default;
  DeviceCopy(DeviceAllocator& allocator, const void* host, uint64_t bytes);
  const void* get() const { return memory_.get(); }
  void* get() { return memory_.get(); }
  explicit operator bool() const { return memory_ != nullptr; }

 private:
  DeviceBuffer memory_;
};

// `values` as elements of a float storage type (float32, float16, bfloat16, rounded to nearest
// even) in device memory: a bias in its layer's storage type, say.
DeviceCopy deviceVector(DeviceAllocator& allocator, const std::vector<float>& values, DataType type);
// `value` as one element of a float storage type in device memory.
DeviceCopy deviceScalar(DeviceAllocator& allocator, float value, DataType type);

}  // namespace kiln::cuda
