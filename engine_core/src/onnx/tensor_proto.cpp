#include "tensor_proto.h"

#include <kiln/error.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstring>
#include <filesystem>
#include <optional>

namespace kiln::onnx_import {
namespace {

using onnx::TensorProto;

[[noreturn]] void fail(ErrorCode code, const std::string& msg) { throw Error(code, msg); }

static_assert(sizeof(off_t) == 8, "external data past 2 GiB needs a 64-bit off_t");

// An external_data offset or length: decimal digits only, 0 to INT64_MAX (std::stoll would take
// "12abc", " 12" and "-5").
std::optional<int64_t> parseByteCount(const std::string& text) {
  int64_t value = -1;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || value < 0) return std::nullopt;
  return value;
}

// Memory-maps [offset, offset+length) of an external-data file; the mapping lives as long as any
// tensor viewing it. Offsets and lengths are 64-bit all the way (files past 4 GiB are common).
HostTensor mapExternal(const TensorProto& proto, DataType dtype, std::vector<int64_t> dims,
                       const std::string& baseDir, const std::string& what) {
  std::string location;
  std::optional<std::string> offsetText, lengthText;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offsetText = kv.value();
    else if (kv.key() == "length") lengthText = kv.value();
  }
  if (location.empty()) fail(ErrorCode::kInvalidModel, what + ": external data has no 'location'");
  std::filesystem::path rel(location);
  if (rel.is_absolute() || location.find("..") != std::string::npos)
    fail(ErrorCode::kInvalidModel, what + ": external data location '" + location +
                                       "' must be a relative path inside the model's folder");
  std::string path = (std::filesystem::path(baseDir.empty() ? "." : baseDir) / rel).string();
  auto byteCount = [&](const char* key, const std::optional<std::string>& text) -> std::optional<int64_t> {
    if (!text) return std::nullopt;
    auto value = parseByteCount(*text);
    if (!value)
      fail(ErrorCode::kInvalidModel, what + ": external data in '" + path + "': '" + key +
                                         "' must be a byte count from 0 to " + std::to_string(INT64_MAX) +
                                         ", not '" + *text + "'");
    return value;
  };
  const int64_t offset = byteCount("offset", offsetText).value_or(0);
  const std::optional<int64_t> length = byteCount("length", lengthText);  // the rest of the file when not given
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(ErrorCode::kIoError, what + ": external data file '" + path +
                                  "' cannot be opened; keep it next to the model file");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorCode::kIoError, what + ": external data file '" + path + "' is not a regular file");
  }
  auto reject = [&](const std::string& why) {
    ::close(fd);
    fail(ErrorCode::kInvalidModel, what + ": external data in '" + path + "' " + why);
  };
  const int64_t fileSize = st.st_size;
  const int64_t need = elementCount(dims) * int64_t(byteSize(dtype));  // < 2^44: the caller caps shapes
  const std::string fileBytes = " (the file has " + std::to_string(fileSize) + " bytes)";
  // Compared without forming offset + length, which a hostile offset could overflow.
  if (offset > fileSize)
    reject("starts at offset " + std::to_string(offset) + ", past the end of the file" + fileBytes +
           "; the file is truncated or belongs to another model");
  const int64_t available = fileSize - offset;
  if (length && *length > available)
    reject("at offset " + std::to_string(offset) + " with length " + std::to_string(*length) +
           " runs past the end of the file" + fileBytes + "; the file is truncated or belongs to another model");
  if (length && *length != need)
    reject("has length " + std::to_string(*length) + ", but shape " + dimsToString(dims) + " of " +
           std::string(toString(dtype)) + " needs " + std::to_string(need) + " bytes");
  if (need > available)
    reject("holds " + std::to_string(available) + " bytes from offset " + std::to_string(offset) +
           " to its end, the tensor needs " + std::to_string(need) + fileBytes);
  if (need == 0) {
    ::close(fd);
    return HostTensor(dtype, std::move(dims));
  }
  const int64_t page = sysconf(_SC_PAGESIZE);
  const off_t alignedOffset = offset / page * page;
  const size_t mapLength = size_t(offset - alignedOffset + need);
  void* base = ::mmap(nullptr, mapLength, PROT_READ, MAP_PRIVATE, fd, alignedOffset);
  ::close(fd);
  if (base == MAP_FAILED) fail(ErrorCode::kIoError, what + ": cannot map external data file '" + path + "'");
  std::shared_ptr<const void> owner(base, [mapLength](const void* p) { ::munmap(const_cast<void*>(p), mapLength); });
  const char* data = static_cast<const char*>(base) + (offset - alignedOffset);
  if (reinterpret_cast<uintptr_t>(data) % 64 == 0) return HostTensor::view(dtype, std::move(dims), owner, data);
  HostTensor copy(dtype, std::move(dims));  // unaligned offset: copy so kernels get aligned data
  std::memcpy(copy.rawData(), data, size_t(need));
  return copy;
}

// The number of values in the typed field that carries `dtype` (without raw_data).
int64_t typedValueCount(const TensorProto& proto, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return proto.float_data_size();
    case DataType::kFloat64: return proto.double_data_size();
    case DataType::kInt64: return proto.int64_data_size();
    case DataType::kUInt32:
    case DataType::kUInt64: return proto.uint64_data_size();
    case DataType::kString: return proto.string_data_size();
    default: return proto.int32_data_size();
  }
}

template <class Src, class Fn>
void fillFrom(const Src& field, HostTensor& t, Fn&& store) {
  for (int64_t i = 0; i < t.elementCount(); ++i) store(i, field.Get(int(i)));
}

}  // namespace

DataType fromOnnxType(int32_t onnxType, const std::string& what) {
  switch (onnxType) {
    case TensorProto::FLOAT: return DataType::kFloat32;
    case TensorProto::UINT8: return DataType::kUInt8;
    case TensorProto::INT8: return DataType::kInt8;
    case TensorProto::UINT16: return DataType::kUInt16;
    case TensorProto::INT16: return DataType::kInt16;
    case TensorProto::INT32: return DataType::kInt32;
    case TensorProto::INT64: return DataType::kInt64;
    case TensorProto::STRING: return DataType::kString;
    case TensorProto::BOOL: return DataType::kBool;
    case TensorProto::FLOAT16: return DataType::kFloat16;
    case TensorProto::DOUBLE: return DataType::kFloat64;
    case TensorProto::UINT32: return DataType::kUInt32;
    case TensorProto::UINT64: return DataType::kUInt64;
    case TensorProto::BFLOAT16: return DataType::kBFloat16;
    case 17: return DataType::kFloat8E4M3;  // FLOAT8E4M3FN (ONNX 1.14)
    case 19: return DataType::kFloat8E5M2;  // FLOAT8E5M2
    case TensorProto::UNDEFINED: return DataType::kUndefined;
    case TensorProto::COMPLEX64:
    case TensorProto::COMPLEX128:
      fail(ErrorCode::kUnsupported, what + ": complex tensors are not supported by Kiln");
    default:
      fail(ErrorCode::kUnsupported, what + ": ONNX data type " + std::to_string(onnxType) + " is not supported by Kiln");
  }
}

int32_t toOnnxType(DataType type) {
  switch (type) {
    case DataType::kFloat32: return TensorProto::FLOAT;
    case DataType::kUInt8: return TensorProto::UINT8;
    case DataType::kInt8: return TensorProto::INT8;
    case DataType::kUInt16: return TensorProto::UINT16;
    case DataType::kInt16: return TensorProto::INT16;
    case DataType::kInt32: return TensorProto::INT32;
    case DataType::kInt64: return TensorProto::INT64;
    case DataType::kString: return TensorProto::STRING;
    case DataType::kBool: return TensorProto::BOOL;
    case DataType::kFloat16: return TensorProto::FLOAT16;
    case DataType::kFloat64: return TensorProto::DOUBLE;
    case DataType::kUInt32: return TensorProto::UINT32;
    case DataType::kUInt64: return TensorProto::UINT64;
    case DataType::kBFloat16: return TensorProto::BFLOAT16;
    case DataType::kFloat8E4M3: return 17;
    case DataType::kFloat8E5M2: return 19;
    case DataType::kUndefined: return TensorProto::UNDEFINED;
  }
  return TensorProto::UNDEFINED;
}

HostTensor tensorFromProto(const TensorProto& proto, const std::string& baseDir, const std::string& what) {
  DataType dtype = fromOnnxType(proto.data_type(), what);
  if (dtype == DataType::kUndefined) fail(ErrorCode::kInvalidModel, what + ": tensor has no data type");
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims)
    if (d < 0) fail(ErrorCode::kInvalidModel, what + ": tensor has negative dimension in shape " + dimsToString(dims));
  // Reject absurd declared sizes before allocating anything.
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d != 0 && count > (int64_t(1) << 40) / d)
      fail(ErrorCode::kInvalidModel, what + ": declared shape " + dimsToString(dims) + " is absurdly large");
    count *= d;
  }
  if (proto.data_location() == TensorProto::EXTERNAL) {
    if (dtype == DataType::kString) fail(ErrorCode::kInvalidModel, what + ": string tensors cannot use external data");
    return mapExternal(proto, dtype, std::move(dims), baseDir, what);
  }
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (dtype == DataType::kString) fail(ErrorCode::kInvalidModel, what + ": string tensors cannot use raw_data");
    size_t need = size_t(count) * byteSize(dtype);
    if (raw.size() != need)
      fail(ErrorCode::kInvalidModel, what + ": raw_data has " + std::to_string(raw.size()) + " bytes, shape " +
                                         dimsToString(dims) + " of " + std::string(toString(dtype)) + " needs " +
                                         std::to_string(need));
    HostTensor t(dtype, std::move(dims));
    if (need) std::memcpy(t.rawData(), raw.data(), need);
    return t;
  }
  // Checked before allocating: a tiny file may declare a huge shape.
  if (typedValueCount(proto, dtype) != count)
    fail(ErrorCode::kInvalidModel, what + ": holds " + std::to_string(typedValueCount(proto, dtype)) +
                                       " values, shape " + dimsToString(dims) + " needs " + std::to_string(count));
  HostTensor t(dtype, std::move(dims));
  void* out = t.rawData();
  switch (dtype) {
    case DataType::kFloat32:
      fillFrom(proto.float_data(), t, [&](int64_t i, float v) { static_cast<float*>(out)[i] = v; });
      break;
    case DataType::kFloat64:
      fillFrom(proto.double_data(), t, [&](int64_t i, double v) { static_cast<double*>(out)[i] = v; });
      break;
    case DataType::kInt64:
      fillFrom(proto.int64_data(), t, [&](int64_t i, int64_t v) { static_cast<int64_t*>(out)[i] = v; });
      break;
    case DataType::kUInt32:
      fillFrom(proto.uint64_data(), t, [&](int64_t i, uint64_t v) { static_cast<uint32_t*>(out)[i] = uint32_t(v); });
      break;
    case DataType::kUInt64:
      fillFrom(proto.uint64_data(), t, [&](int64_t i, uint64_t v) { static_cast<uint64_t*>(out)[i] = v; });
      break;
    case DataType::kString:
      fillFrom(proto.string_data(), t,
               [&](int64_t i, const std::string& v) { static_cast<std::string*>(out)[i] = v; });
      break;
    default: {
      // int32_data carries every type of 32 bits or fewer (fp16/bf16 as their bit patterns).
      size_t elem = byteSize(dtype);
      fillFrom(proto.int32_data(), t, [&](int64_t i, int32_t v) {
        std::memcpy(static_cast<char*>(out) + i * elem, &v, elem);  // little-endian low bytes
      });
    }
  }
  return t;
}

HostTensor tensorFromSparseProto(const onnx::SparseTensorProto& proto, const std::string& baseDir,
                                 const std::string& what) {
  HostTensor values = tensorFromProto(proto.values(), baseDir, what + " (sparse values)");
  HostTensor indices = tensorFromProto(proto.indices(), baseDir, what + " (sparse indices)");
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  if (values.dtype() == DataType::kString || values.rank() != 1)
    fail(ErrorCode::kInvalidModel, what + ": sparse values must be a 1-D numeric tensor");
  int64_t nnz = values.elementCount();
  bool coordinates = indices.rank() == 2;  // [nnz, rank] coordinates instead of linear indices
  int64_t indicesPerValue = coordinates ? int64_t(dims.size()) : 1;
  if (indices.elementCount() != nnz * indicesPerValue || (coordinates && indices.dim(1) != indicesPerValue))
    fail(ErrorCode::kInvalidModel, what + ": sparse indices of shape " + dimsToString(indices.dims()) +
                                       " do not match " + std::to_string(nnz) + " values of a rank-" +
                                       std::to_string(dims.size()) + " tensor");
  int64_t total = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d != 0 && total > (int64_t(1) << 40) / d))
      fail(ErrorCode::kInvalidModel, what + ": sparse tensor shape " + dimsToString(dims) + " is invalid or absurdly large");
    total *= d;
  }
  HostTensor dense(values.dtype(), dims);
  auto idx = indices.toInt64Vector();
  size_t elem = byteSize(values.dtype());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t linear = 0;
    if (coordinates) {
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t coordinate = idx[size_t(k) * dims.size() + d];
        if (coordinate < 0 || coordinate >= dims[d]) fail(ErrorCode::kInvalidModel, what + ": sparse index out of range");
        linear = linear * dims[d] + coordinate;
      }
    } else {
      linear = idx[size_t(k)];
    }
    if (linear < 0 || linear >= total) fail(ErrorCode::kInvalidModel, what + ": sparse index out of range");
    std::memcpy(static_cast<char*>(dense.rawData()) + linear * elem,
                static_cast<const char*>(values.rawData()) + k * elem, elem);
  }
  return dense;
}

TensorProto tensorToProto(const HostTensor& tensor, const std::string& name) {
  TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(toOnnxType(tensor.dtype()));
  for (int64_t d : tensor.dims()) proto.add_dims(d);
  if (tensor.dtype() == DataType::kString) {
    const auto* s = tensor.data<std::string>();
    for (int64_t i = 0; i < tensor.elementCount(); ++i) proto.add_string_data(s[i]);
  } else {
    proto.set_raw_data(std::string(static_cast<const char*>(tensor.rawData()), tensor.byteSize()));
  }
  return proto;
}

void applyTypeProto(const onnx::TypeProto& type, Tensor& t) {
  const onnx::TypeProto* tensorType = &type;
  if (type.has_sequence_type()) {
    t.kind = ValueKind::kSequence;
    tensorType = &type.sequence_type().elem_type();
  } else if (type.has_optional_type()) {
    const auto& elem = type.optional_type().elem_type();
    t.kind = elem.has_sequence_type() ? ValueKind::kOptionalSequence : ValueKind::kOptionalTensor;
    tensorType = elem.has_sequence_type() ? &elem.sequence_type().elem_type() : &elem;
  }
  if (!tensorType->has_tensor_type()) return;
  const auto& tt = tensorType->tensor_type();
  if (tt.elem_type() != 0) t.dtype = fromOnnxType(tt.elem_type(), "tensor '" + t.name + "'");
  if (!tt.has_shape()) {
    t.shape = Shape::unknownRank();
    return;
  }
  std::vector<Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) dims.emplace_back(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty()) dims.push_back(Dim::symbol(d.dim_param()));
    else dims.push_back(Dim::unknown());
  }
  t.shape = Shape(std::move(dims));
}

}  // namespace kiln::onnx_import
