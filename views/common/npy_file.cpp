#include "common/npy_file.h"

#include <kiln/error.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>

namespace kiln::views {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "'" + path + "' is not a usable .npy file: " + what);
}

DataType dataTypeOf(const std::string& descr, const std::string& path) {
  static const std::map<std::string, DataType> kTypes = {
      {"f2", DataType::kFloat16}, {"f4", DataType::kFloat32}, {"f8", DataType::kFloat64}, {"i1", DataType::kInt8},
      {"i2", DataType::kInt16},   {"i4", DataType::kInt32},   {"i8", DataType::kInt64},   {"u1", DataType::kUInt8},
      {"u2", DataType::kUInt16},  {"u4", DataType::kUInt32},  {"u8", DataType::kUInt64},  {"b1", DataType::kBool}};
  // '<' little-endian, '|' not applicable (one byte), '=' native (little on the machines Kiln runs on).
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '='))
    if (auto it = kTypes.find(descr.substr(1)); it != kTypes.end()) return it->second;
  fail(path, "dtype '" + descr + "' is not supported; save it as little-endian float32, float16, int or bool");
}

std::string headerField(const std::string& header, const std::string& pattern, const std::string& path) {
  std::smatch match;
  if (!std::regex_search(header, match, std::regex(pattern))) fail(path, "its header has no " + pattern);
  return match[1].str();
}

}  // namespace

HostTensor readNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIoError, "cannot open '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) fail(path, "the NumPy magic is missing");
  const int major = static_cast<unsigned char>(bytes[6]);
  const size_t lengthBytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + lengthBytes) fail(path, "it ends inside its header");
  size_t headerLength = 0;
  for (size_t i = 0; i < lengthBytes; ++i) headerLength |= size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  const size_t dataStart = 8 + lengthBytes + headerLength;
  if (bytes.size() < dataStart) fail(path, "it ends inside its header");
  const std::string header = bytes.substr(8 + lengthBytes, headerLength);

  if (headerField(header, "'fortran_order':\\s*(\\w+)", path) != "False")
    fail(path, "it is in Fortran order; save it with numpy.ascontiguousarray");
  const DataType dtype = dataTypeOf(headerField(header, "'descr':\\s*'([^']*)'", path), path);
  std::vector<int64_t> dims;
  const std::string shape = headerField(header, "'shape':\\s*\\(([^)]*)\\)", path);
  const std::regex number("\\d+");
  for (std::sregex_iterator it(shape.begin(), shape.end(), number), end; it != end; ++it)
    dims.push_back(std::stoll(it->str()));

  HostTensor tensor(dtype, dims);
  if (bytes.size() - dataStart < tensor.byteSize())
    fail(path, "it holds " + std::to_string(bytes.size() - dataStart) + " data bytes, the shape needs " +
                   std::to_string(tensor.byteSize()));
  std::memcpy(tensor.rawData(), bytes.data() + dataStart, tensor.byteSize());
  return tensor;
}

}  // namespace kiln::views
