// NumPy .npy reading and writing. Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// "\x93NUMPY", version (major, minor), header length (uint16 for 1.x, uint32 for 2.x/3.x), then a
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } and the raw data.
#include <kiln/error.h>
#include <kiln/npy.h>
#include <kiln/shape.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace kiln {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kHeaderAlignment = 64;  // numpy aligns the data start to 64 bytes

struct NpyDtype {
  DataType dtype;
  std::string_view descr;  // little-endian numpy descr
};
constexpr NpyDtype kNpyDtypes[] = {
    {DataType::kFloat16, "<f2"}, {DataType::kFloat32, "<f4"}, {DataType::kFloat64, "<f8"},
    {DataType::kInt8, "|i1"},    {DataType::kInt16, "<i2"},   {DataType::kInt32, "<i4"},
    {DataType::kInt64, "<i8"},   {DataType::kUInt8, "|u1"},   {DataType::kUInt16, "<u2"},
    {DataType::kUInt32, "<u4"},  {DataType::kUInt64, "<u8"},  {DataType::kBool, "|b1"},
};

[[noreturn]] void invalid(const std::string& source, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "'" + source + "' is not a readable .npy file: " + why);
}

// The header's values, as far as Kiln cares.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

// A strict reader for the small subset of Python literal syntax numpy writes in headers.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  NpyHeader parse() {
    NpyHeader header;
    bool haveDescr = false, haveOrder = false, haveShape = false;
    expect('{');
    while (!tryConsume('}')) {
      std::string key = parseString();
      expect(':');
      if (key == "descr") {
        skipSpace();
        if (peek() == '[') invalid(source_, "structured arrays (record dtypes) are not supported");
        header.descr = parseString();
        haveDescr = true;
      } else if (key == "fortran_order") {
        header.fortranOrder = parseBool();
        haveOrder = true;
      } else if (key == "shape") {
        header.shape = parseShape();
        haveShape = true;
      } else {
        invalid(source_, "unexpected header key '" + key + "'");
      }
      if (!tryConsume(',')) {
        expect('}');
        break;
      }
    }
    if (!haveDescr || !haveOrder || !haveShape)
      invalid(source_, "the header lacks one of 'descr', 'fortran_order' and 'shape'");
    return header;
  }

 private:
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool tryConsume(char c) {
    skipSpace();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!tryConsume(c)) invalid(source_, std::string("malformed header (expected '") + c + "')");
  }
  std::string parseString() {
    skipSpace();
    char quote = peek();
    if (quote != '\'' && quote != '"') invalid(source_, "malformed header (expected a quoted string)");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) invalid(source_, "malformed header (unterminated string)");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }
  bool parseBool() {
    skipSpace();
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, {std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    invalid(source_, "malformed header ('fortran_order' must be True or False)");
  }
  std::vector<int64_t> parseShape() {
    std::vector<int64_t> dims;
    expect('(');
    while (!tryConsume(')')) {
      skipSpace();
      size_t start = pos_;
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (value > (INT64_MAX - 9) / 10) invalid(source_, "a shape dimension is absurdly large");
        value = value * 10 + (text_[pos_++] - '0');
      }
      if (pos_ == start) invalid(source_, "malformed header (shape must be a tuple of non-negative integers)");
      if (peek() == 'L') ++pos_;  // Python 2 long literal
      dims.push_back(value);
      if (!tryConsume(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

// Maps a numpy descr to a Kiln dtype; `bigEndian` reports whether the data needs byte swapping.
DataType dtypeFromDescr(const std::string& descr, const std::string& source, bool& bigEndian) {
  if (descr.size() < 2) invalid(source, "dtype '" + descr + "' is not a numpy dtype string");
  char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=')
    invalid(source, "dtype '" + descr + "' has no byte-order mark");
  std::string kindAndSize = descr.substr(1);
  if (kindAndSize[0] == 'O') invalid(source, "object arrays hold Python objects and cannot be read; save a numeric array");
  for (const auto& entry : kNpyDtypes) {
    if (entry.descr.substr(1) == kindAndSize) {
      bigEndian = order == '>' && byteSize(entry.dtype) > 1;
      return entry.dtype;
    }
  }
  throw Error(ErrorCode::kInvalidArgument, "'" + source + "' has numpy dtype '" + descr +
                                               "', which Kiln does not read; save it as a float, int, uint "
                                               "or bool array (e.g. arr.astype('float32'))");
}

void swapBytes(char* data, int64_t count, size_t elementSize) {
  for (int64_t i = 0; i < count; ++i) std::reverse(data + i * elementSize, data + (i + 1) * elementSize);
}

std::string_view descrOf(DataType dtype) {
  for (const auto& entry : kNpyDtypes)
    if (entry.dtype == dtype) return entry.descr;
  throw Error(ErrorCode::kUnsupported, "a " + std::string(toString(dtype)) +
                                           " tensor cannot be stored in a .npy file (numpy has no such dtype); "
                                           "convert it to float32 first");
}

uint32_t readLittleEndian(std::string_view bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= uint32_t(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return value;
}

std::string readWholeFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(ErrorCode::kIoError, "'" + path + "' does not exist or is not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  if (!in || !(contents << in.rdbuf()))
    throw Error(ErrorCode::kIoError, "cannot read '" + path + "'");
  return std::move(contents).str();
}

}  // namespace

HostTensor parseNpy(std::string_view bytes, const std::string& source) {
  if (bytes.size() < kMagic.size() + 4 || bytes.substr(0, kMagic.size()) != kMagic)
    invalid(source, "it does not start with the .npy magic \\x93NUMPY");
  int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    invalid(source, "format version " + std::to_string(major) + ".x is unknown (Kiln reads 1.0 to 3.0)");
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t headerStart = 8 + lengthWidth;
  if (bytes.size() < headerStart) invalid(source, "the file is truncated inside the header length");
  size_t headerLength = readLittleEndian(bytes, 8, lengthWidth);
  if (headerLength > bytes.size() - headerStart) invalid(source, "the file is truncated inside the header");
  NpyHeader header = HeaderParser(bytes.substr(headerStart, headerLength), source).parse();
  if (header.fortranOrder)
    invalid(source, "it is stored in Fortran (column-major) order; save it with np.ascontiguousarray(arr)");

  bool bigEndian = false;
  DataType dtype = dtypeFromDescr(header.descr, source, bigEndian);
  std::string_view data = bytes.substr(headerStart + headerLength);
  size_t elementSize = byteSize(dtype);
  // The size is checked before allocating anything: a tiny file may declare an absurd shape.
  uint64_t count = std::find(header.shape.begin(), header.shape.end(), 0) != header.shape.end() ? 0 : 1;
  for (int64_t d : header.shape) {
    if (count != 0 && uint64_t(d) > (uint64_t(INT64_MAX) / elementSize) / count)
      invalid(source, "declared shape " + dimsToString(header.shape) + " is absurdly large");
    count *= uint64_t(d);
  }
  if (count * elementSize != data.size())
    invalid(source, "it holds " + std::to_string(data.size()) + " data bytes, but shape " +
                        dimsToString(header.shape) + " of " + std::string(toString(dtype)) + " needs " +
                        std::to_string(count * elementSize));

  HostTensor tensor(dtype, header.shape);
  char* out = static_cast<char*>(tensor.rawData());
  if (!data.empty()) std::memcpy(out, data.data(), data.size());
  if (bigEndian) swapBytes(out, tensor.elementCount(), elementSize);
  if (dtype == DataType::kBool)  // numpy writes 0/1, but any other byte would be an invalid C++ bool
    for (int64_t i = 0; i < tensor.elementCount(); ++i) out[i] = out[i] != 0;
  return tensor;
}

std::string serializeNpy(const HostTensor& tensor) {
  std::string_view descr = descrOf(tensor.dtype());
  std::string shape = "(";
  for (int64_t d : tensor.dims()) shape += std::to_string(d) + ", ";
  if (tensor.rank() > 1) shape.resize(shape.size() - 2);
  else if (tensor.rank() == 1) shape.resize(shape.size() - 1);  // "(3,)": a 1-tuple keeps its comma
  shape += ")";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t lengthWidth = header.size() + kHeaderAlignment > 0xFFFF ? 4 : 2;  // version 2.0 for huge headers
  size_t prefix = kMagic.size() + 2 + lengthWidth;
  header.append(kHeaderAlignment - 1 - (prefix + header.size()) % kHeaderAlignment, ' ');
  header += '\n';

  std::string bytes(kMagic);
  bytes += char(lengthWidth == 2 ? 1 : 2);
  bytes += char(0);
  for (size_t i = 0; i < lengthWidth; ++i) bytes += char((header.size() >> (8 * i)) & 0xFF);
  bytes += header;
  bytes.append(static_cast<const char*>(tensor.rawData()), tensor.byteSize());
  return bytes;
}

HostTensor readNpyFile(const std::string& path) { return parseNpy(readWholeFile(path), path); }

void writeNpyFile(const HostTensor& tensor, const std::string& path) { writeFileAtomically(path, serializeNpy(tensor)); }

}  // namespace kiln
