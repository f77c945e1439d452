#pragma once
// Device memory for a GPU test, poisoned (0xFF bytes) when made so an unwritten output shows;
// at least 16 bytes are allocated, so an empty tensor still has a valid pointer, and a multiple of
// 4, as the engine's arena (256-byte rounded buffers) gives: byte-wide atomics read the aligned
// 32-bit word around their byte.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::test {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&data_, bytes < 16 ? 16 : (bytes + 3) / 4 * 4) != cudaSuccess) {
      ADD_FAILURE() << "cudaMalloc of " << bytes << " bytes failed";
      data_ = nullptr;
      return;
    }
    fill(0xFF);
  }
  template <class T>
  explicit DeviceBuffer(const std::vector<T>& values) : DeviceBuffer(values.size() * sizeof(T)) {
    if (data_ && bytes_) EXPECT_EQ(cudaMemcpy(data_, values.data(), bytes_, cudaMemcpyHostToDevice), cudaSuccess);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data_); }

  void* data() const { return data_; }
  void* get() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }
  bool ok() const { return data_ != nullptr; }

  void fill(uint8_t byte) const {
    if (data_ && bytes_) EXPECT_EQ(cudaMemset(data_, byte, bytes_), cudaSuccess);
  }
  void poison() const { fill(0xFF); }
  void upload(const std::vector<uint8_t>& host) const {
    EXPECT_EQ(host.size(), bytes_);
    if (bytes_) EXPECT_EQ(cudaMemcpy(data_, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  // Waits for the device (a kernel fault shows here), then copies back.
  template <class T>
  std::vector<T> read() const {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
    std::vector<T> values(bytes_ / sizeof(T));
    if (bytes_) EXPECT_EQ(cudaMemcpy(values.data(), data_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    return values;
  }
  std::vector<uint8_t> download() const { return read<uint8_t>(); }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

inline std::string dimsText(const std::vector<int64_t>& dims) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? "," : "") << dims[i];
  s << "]";
  return s.str();
}

}  // namespace kiln::test
