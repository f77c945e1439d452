#include "cuda_runtime_support.h"

#include <kiln/error.h>

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cuda/timing/hold_stream.h>

namespace kiln::cuda {

void check(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  std::string text = what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  if (status == cudaErrorMemoryAllocation)
    text += "; the GPU is out of memory: build for smaller shapes (--max-shapes), run fewer contexts, or free "
            "memory other programs hold";
  throw Error(ErrorCode::kRuntimeError, text);
}

std::optional<kernels::cuda::ElementType> elementTypeOf(DataType type) {
  using kernels::cuda::ElementType;
  switch (type) {
    case DataType::kFloat32: return ElementType::kFloat32;
    case DataType::kFloat16: return ElementType::kFloat16;
    case DataType::kBFloat16: return ElementType::kBFloat16;
    case DataType::kFloat64: return ElementType::kFloat64;
    case DataType::kInt8: return ElementType::kInt8;
    case DataType::kInt16: return ElementType::kInt16;
    case DataType::kInt32: return ElementType::kInt32;
    case DataType::kInt64: return ElementType::kInt64;
    case DataType::kUInt8: return ElementType::kUInt8;
    case DataType::kUInt16: return ElementType::kUInt16;
    case DataType::kUInt32: return ElementType::kUInt32;
    case DataType::kUInt64: return ElementType::kUInt64;
    case DataType::kBool: return ElementType::kBool;
    case DataType::kFloat8E4M3: return ElementType::kFloat8E4M3;
    case DataType::kFloat8E5M2: return ElementType::kFloat8E5M2;
    default: return std::nullopt;
  }
}

namespace {
uint64_t rounded(uint64_t bytes) { return (std::max<uint64_t>(bytes, 1) + 255) / 256 * 256; }
}  // namespace

CudaAllocator::~CudaAllocator() {
  for (auto& [size, block] : cached_) cudaFree(block);
  for (auto& [block, size] : live_) cudaFree(block);
}

void* CudaAllocator::allocate(uint64_t bytes, uint64_t alignment) {
  if (alignment > 256)
    throw Error(ErrorCode::kInvalidArgument, "device allocations align to 256 bytes at most, asked " +
                                                 std::to_string(alignment));
  const uint64_t size = rounded(bytes);
  std::lock_guard lock(mutex_);
  if (auto it = cached_.find(size); it != cached_.end()) {
    void* block = it->second;
    cached_.erase(it);
    live_[block] = size;
    return block;
  }
  void* block = nullptr;
  cudaError_t status = cudaMalloc(&block, size);
  if (status == cudaErrorMemoryAllocation && !cached_.empty()) {  // give the cache back, then try again
    cudaGetLastError();
    for (auto& [s, b] : cached_) cudaFree(b);
    cached_.clear();
    status = cudaMalloc(&block, size);
  }
  check(status, "allocating " + std::to_string(bytes) + " bytes of device memory");
  live_[block] = size;
  return block;
}

void CudaAllocator::free(void* memory) {
  if (!memory) return;
  std::lock_guard lock(mutex_);
  auto it = live_.find(memory);
  if (it == live_.end()) return;  // not ours: nothing to give back
  cached_.emplace(it->second, memory);
  live_.erase(it);
}

CudaStream::CudaStream(cudaStream_t external) : stream_(external), owned_(external == nullptr) {
  if (owned_) check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a CUDA stream");
}

CudaStream::~CudaStream() {
  if (owned_ && stream_) cudaStreamDestroy(stream_);
}

void CudaStream::copy(void* destination, const void* source, uint64_t bytes) {
  if (!bytes) return;
  check(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, stream_), "copying " + std::to_string(bytes) +
                                                                                      " bytes on a CUDA stream");
}

void CudaStream::wait(const Event& event) {
  check(cudaStreamWaitEvent(stream_, dynamic_cast<const CudaEvent&>(event).handle(), 0), "waiting for an event");
}

void CudaStream::synchronize() { check(cudaStreamSynchronize(stream_), "waiting for a CUDA stream"); }

void CudaStream::holdBack(double microseconds) {
  if (microseconds > 0)
    check(kernels::cuda::holdStream(uint64_t(microseconds * 1000), stream_), "holding a CUDA stream back");
}

cudaStream_t nativeStream(Stream& stream) { return static_cast<cudaStream_t>(stream.native()); }

CudaEvent::CudaEvent() { check(cudaEventCreate(&event_), "creating a CUDA event"); }
CudaEvent::~CudaEvent() {
  if (event_) cudaEventDestroy(event_);
}

void CudaEvent::record(Stream& stream) {
  check(cudaEventRecord(event_, nativeStream(stream)), "recording a CUDA event");
  recorded_ = true;
}

void CudaEvent::synchronize() { check(cudaEventSynchronize(event_), "waiting for a CUDA event"); }

double CudaEvent::millisecondsSince(const Event& start) const {
  const auto& begin = dynamic_cast<const CudaEvent&>(start);
  if (!recorded_ || !begin.recorded_)
    throw Error(ErrorCode::kInvalidArgument, "elapsed time between events that were never recorded");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, begin.event_, event_), "timing between two CUDA events");
  return ms;
}

DeviceCopy::DeviceCopy(DeviceAllocator& allocator, const void* host, uint64_t bytes)
    : memory_(allocateBuffer(allocator, std::max<uint64_t>(bytes, 1), 256)) {
  if (bytes) check(cudaMemcpy(memory_.get(), host, bytes, cudaMemcpyHostToDevice), "uploading weights");
}

DeviceCopy deviceVector(DeviceAllocator& allocator, const std::vector<float>& values, DataType type) {
  auto narrowed = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> v;
    for (float x : values) v.push_back(T(x));
    return DeviceCopy(allocator, v.data(), v.size() * sizeof(T));
  };
  if (type == DataType::kFloat16) return narrowed(kernels::Float16{});
  if (type == DataType::kBFloat16) return narrowed(kernels::BFloat16{});
  if (type != DataType::kFloat32)
    throw Error(ErrorCode::kInternal, "device values of " + std::string(toString(type)) + " (float types only)");
  return DeviceCopy(allocator, values.data(), values.size() * sizeof(float));
}

DeviceCopy deviceScalar(DeviceAllocator& allocator, float value, DataType type) {
  return deviceVector(allocator, {value}, type);
}

}  // namespace kiln::cuda
