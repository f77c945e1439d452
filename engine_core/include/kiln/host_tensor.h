#pragma once
// Tensor data in host memory: weights, inputs and outputs of the CPU backend, constants.
#include <kiln/data_type.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::kernels {
struct Float16;
struct BFloat16;
struct Float8E4M3;
struct Float8E5M2;
}  // namespace kiln::kernels

namespace kiln {

template <class T>
struct DataTypeOf;
#define KILN_DATA_TYPE_OF(T, DT) \
  template <>                    \
  struct DataTypeOf<T> {         \
    static constexpr DataType value = DT; \
  }
KILN_DATA_TYPE_OF(float, DataType::kFloat32);
KILN_DATA_TYPE_OF(double, DataType::kFloat64);
KILN_DATA_TYPE_OF(kernels::Float16, DataType::kFloat16);
KILN_DATA_TYPE_OF(kernels::BFloat16, DataType::kBFloat16);
KILN_DATA_TYPE_OF(kernels::Float8E4M3, DataType::kFloat8E4M3);
KILN_DATA_TYPE_OF(kernels::Float8E5M2, DataType::kFloat8E5M2);
KILN_DATA_TYPE_OF(int8_t, DataType::kInt8);
KILN_DATA_TYPE_OF(int16_t, DataType::kInt16);
KILN_DATA_TYPE_OF(int32_t, DataType::kInt32);
KILN_DATA_TYPE_OF(int64_t, DataType::kInt64);
KILN_DATA_TYPE_OF(uint8_t, DataType::kUInt8);
KILN_DATA_TYPE_OF(uint16_t, DataType::kUInt16);
KILN_DATA_TYPE_OF(uint32_t, DataType::kUInt32);
KILN_DATA_TYPE_OF(uint64_t, DataType::kUInt64);
KILN_DATA_TYPE_OF(bool, DataType::kBool);
KILN_DATA_TYPE_OF(std::string, DataType::kString);
#undef KILN_DATA_TYPE_OF

// A dense, row-major tensor. Copies share the buffer (like a shared_ptr); clone() copies the data.
class HostTensor {
 public:
  HostTensor() = default;
  // Allocates zero-initialised storage (64-byte aligned).
  HostTensor(DataType dtype, std::vector<int64_t> dims);
  // Views memory owned by `owner` (e.g. a memory-mapped external-data file) without copying.
  static HostTensor view(DataType dtype, std::vector<int64_t> dims, std::shared_ptr<const void> owner,
                         const void* data);
  template <class T>
  static HostTensor fromVector(std::vector<int64_t> dims, const std::vector<T>& values);
  template <class T>
  static HostTensor scalar(T value) {
    return fromVector<T>({}, {value});
  }

  bool empty() const { return dtype_ == DataType::kUndefined; }
  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t dim(size_t i) const { return dims_[i]; }
  int64_t elementCount() const { return count_; }
  size_t byteSize() const;

  void* rawData() { return data_; }
  const void* rawData() const { return data_; }
  template <class T>
  T* data() {
    checkType(DataTypeOf<T>::value);
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    checkType(DataTypeOf<T>::value);
    return static_cast<const T*>(data_);
  }
  // Values converted to double / int64 (for attributes-as-inputs such as Reshape's shape).
  std::vector<int64_t> toInt64Vector() const;
  std::vector<double> toDoubleVector() const;

  // Same storage, other dims (element count must match).
  HostTensor reshaped(std::vector<int64_t> dims) const;
  // Same storage read as another type and shape; the new view must fit in the old bytes (for
  // in-place conversions such as fp32 -> fp16).
  HostTensor viewAs(DataType dtype, std::vector<int64_t> dims) const;
  // A tensor that lives inside `owner`'s memory (the engine's activation arena).
  static HostTensor inArena(DataType dtype, std::vector<int64_t> dims, std::shared_ptr<void> arena, size_t offset);
  HostTensor clone() const;
  bool sharesStorageWith(const HostTensor& other) const { return storage_ == other.storage_; }
  // False for a view of memory nobody owns through it (view() with no owner: bound engine memory).
  bool ownsMemory() const { return storage_ != nullptr; }

 private:
  void checkType(DataType requested) const;

  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> dims_;
  int64_t count_ = 0;
  std::shared_ptr<const void> storage_;
  void* data_ = nullptr;
};

template <class T>
HostTensor HostTensor::fromVector(std::vector<int64_t> dims, const std::vector<T>& values) {
  HostTensor t(DataTypeOf<T>::value, std::move(dims));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size() && int64_t(i) < t.elementCount(); ++i) out[i] = values[i];
  return t;
}

// What an ONNX value can be besides a tensor: a sequence of tensors or an optional.
enum class ValueKind : uint8_t { kTensor, kSequence, kOptionalTensor, kOptionalSequence };
std::string_view toString(ValueKind kind);

// A run-time value: a tensor, a sequence of tensors, or an empty optional.
struct Value {
  ValueKind kind = ValueKind::kTensor;
  bool hasElement = true;  // false only for an empty optional
  HostTensor tensor;
  std::vector<HostTensor> sequence;

  Value() = default;
  Value(HostTensor t) : tensor(std::move(t)) {}  // NOLINT: a tensor is the common case
  static Value ofSequence(std::vector<HostTensor> items) {
    Value v;
    v.kind = ValueKind::kSequence;
    v.sequence = std::move(items);
    return v;
  }
  static Value emptyOptional(ValueKind kind) {
    Value v;
    v.kind = kind;
    v.hasElement = false;
    return v;
  }
  bool isSequence() const { return kind == ValueKind::kSequence || kind == ValueKind::kOptionalSequence; }
};

}  // namespace kiln
