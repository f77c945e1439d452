#include <kiln/error.h>
#include <kiln/host_tensor.h>
#include <kiln/shape.h>

#include <kernels/cpu/common/numeric_types.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace kiln {
namespace {

int64_t checkedCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      throw Error(ErrorCode::kInvalidArgument, "tensor shape " + dimsToString(dims) + " has a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw Error(ErrorCode::kInvalidArgument, "tensor shape " + dimsToString(dims) + " overflows 64-bit element count");
    n *= d;
  }
  return n;
}

std::shared_ptr<void> allocateBytes(size_t bytes) {
  size_t rounded = ((bytes + 63) / 64) * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p)
    throw Error(ErrorCode::kRuntimeError,
                "out of host memory allocating a tensor of " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace

HostTensor::HostTensor(DataType dtype, std::vector<int64_t> dims)
    : dtype_(dtype), dims_(std::move(dims)), count_(checkedCount(dims_)) {
  if (dtype_ == DataType::kString) {
    auto strings = std::make_shared<std::vector<std::string>>(size_t(count_));
    data_ = strings->data();
    storage_ = strings;
    return;
  }
  size_t elem = kiln::byteSize(dtype_);
  if (elem == 0) throw Error(ErrorCode::kInvalidArgument, "cannot allocate a tensor of type undefined");
  if (count_ > int64_t(std::numeric_limits<size_t>::max() / 2) / int64_t(elem))
    throw Error(ErrorCode::kInvalidArgument, "tensor of shape " + dimsToString(dims_) + " is too large");
  auto buf = allocateBytes(size_t(count_) * elem);
  data_ = buf.get();
  storage_ = std::move(buf);
}

HostTensor HostTensor::view(DataType dtype, std::vector<int64_t> dims, std::shared_ptr<const void> owner,
                            const void* data) {
  HostTensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.count_ = checkedCount(t.dims_);
  t.storage_ = std::move(owner);
  t.data_ = const_cast<void*>(data);
  return t;
}

size_t HostTensor::byteSize() const { return size_t(count_) * kiln::byteSize(dtype_); }

void HostTensor::checkType(DataType requested) const {
  if (requested != dtype_)
    throw Error(ErrorCode::kInternal, "tensor holds " + std::string(toString(dtype_)) + " but was read as " +
                                          std::string(toString(requested)));
}

std::vector<int64_t> HostTensor::toInt64Vector() const {
  std::vector<int64_t> out(static_cast<size_t>(count_));
  const void* p = data_;
  for (int64_t i = 0; i < count_; ++i) {
    switch (dtype_) {
      case DataType::kInt64: out[i] = static_cast<const int64_t*>(p)[i]; break;
      case DataType::kInt32: out[i] = static_cast<const int32_t*>(p)[i]; break;
      case DataType::kInt16: out[i] = static_cast<const int16_t*>(p)[i]; break;
      case DataType::kInt8: out[i] = static_cast<const int8_t*>(p)[i]; break;
      case DataType::kUInt8: out[i] = static_cast<const uint8_t*>(p)[i]; break;
      case DataType::kUInt16: out[i] = static_cast<const uint16_t*>(p)[i]; break;
      case DataType::kUInt32: out[i] = static_cast<const uint32_t*>(p)[i]; break;
      case DataType::kUInt64: out[i] = int64_t(static_cast<const uint64_t*>(p)[i]); break;
      case DataType::kBool: out[i] = static_cast<const bool*>(p)[i]; break;
      default: {
        auto d = toDoubleVector();
        for (int64_t j = 0; j < count_; ++j) out[j] = int64_t(d[j]);
        return out;
      }
    }
  }
  return out;
}

std::vector<double> HostTensor::toDoubleVector() const {
  std::vector<double> out(static_cast<size_t>(count_));
  const void* p = data_;
  for (int64_t i = 0; i < count_; ++i) {
    switch (dtype_) {
      case DataType::kFloat32: out[i] = static_cast<const float*>(p)[i]; break;
      case DataType::kFloat64: out[i] = static_cast<const double*>(p)[i]; break;
      case DataType::kFloat16:
        out[i] = kernels::Float16::toFloat(static_cast<const uint16_t*>(p)[i]);
        break;
      case DataType::kBFloat16:
        out[i] = float(kernels::BFloat16::fromBits(static_cast<const uint16_t*>(p)[i]));
        break;
      case DataType::kFloat8E4M3: out[i] = kernels::Float8E4M3::toFloat(static_cast<const uint8_t*>(p)[i]); break;
      case DataType::kFloat8E5M2: out[i] = kernels::Float8E5M2::toFloat(static_cast<const uint8_t*>(p)[i]); break;
      case DataType::kString:
      case DataType::kUndefined:
        throw Error(ErrorCode::kInvalidArgument, "a " + std::string(toString(dtype_)) + " tensor has no numeric values");
      default: {
        auto v = toInt64Vector();
        for (int64_t j = 0; j < count_; ++j) out[j] = double(v[j]);
        return out;
      }
    }
  }
  return out;
}

HostTensor HostTensor::reshaped(std::vector<int64_t> dims) const {
  int64_t n = checkedCount(dims);
  if (n != count_)
    throw Error(ErrorCode::kInvalidArgument, "cannot reshape a tensor of shape " + dimsToString(dims_) + " to " +
                                                 dimsToString(dims));
  HostTensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

HostTensor HostTensor::viewAs(DataType dtype, std::vector<int64_t> dims) const {
  HostTensor t = *this;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.count_ = checkedCount(t.dims_);
  if (t.byteSize() > byteSize())
    throw Error(ErrorCode::kInternal, "a " + std::string(toString(dtype)) + " view of shape " + dimsToString(t.dims_) +
                                          " does not fit in the tensor's storage");
  return t;
}

HostTensor HostTensor::inArena(DataType dtype, std::vector<int64_t> dims, std::shared_ptr<void> arena, size_t offset) {
  HostTensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.count_ = checkedCount(t.dims_);
  t.data_ = static_cast<char*>(arena.get()) + offset;
  t.storage_ = std::move(arena);
  return t;
}

HostTensor HostTensor::clone() const {
  if (empty()) return {};
  HostTensor t(dtype_, dims_);
  if (dtype_ == DataType::kString) {
    auto* src = static_cast<const std::string*>(data_);
    auto* dst = static_cast<std::string*>(t.data_);
    for (int64_t i = 0; i < count_; ++i) dst[i] = src[i];
  } else if (count_ > 0) {
    std::memcpy(t.data_, data_, byteSize());
  }
  return t;
}

std::string_view toString(ValueKind kind) {
  switch (kind) {
    case ValueKind::kTensor: return "tensor";
    case ValueKind::kSequence: return "sequence";
    case ValueKind::kOptionalTensor: return "optional tensor";
    case ValueKind::kOptionalSequence: return "optional sequence";
  }
  return "tensor";
}

}  // namespace kiln
