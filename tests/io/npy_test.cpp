// NumPy .npy reading and writing: round trips of every dtype, hand-written files as numpy writes
// them, and clear rejection of files Kiln cannot read.
#include <kiln/error.h>
#include <kiln/npy.h>

#include "kernels/cpu/common/numeric_types.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

using namespace kiln;

namespace {

// "\x93NUMPY" v1.0 with `header` padded to 64 bytes, followed by `data`.
std::string npyBytes(const std::string& header, const std::string& data, char major = 1) {
  std::string padded = header;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + padded.size() + 1) % 64) padded += ' ';
  padded += '\n';
  std::string bytes = std::string("\x93NUMPY", 6) + major + '\0';
  for (size_t i = 0; i < prefix - 8; ++i) bytes += char((padded.size() >> (8 * i)) & 0xFF);
  return bytes + padded + data;
}

template <class T>
std::string rawBytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// Seeded random bytes for every element, with bools kept 0/1.
HostTensor randomTensor(DataType dtype, std::vector<int64_t> dims, uint32_t seed) {
  HostTensor t(dtype, std::move(dims));
  std::mt19937 rng(seed);
  auto* bytes = static_cast<unsigned char*>(t.rawData());
  for (size_t i = 0; i < t.byteSize(); ++i) bytes[i] = static_cast<unsigned char>(rng() | 1);
  if (dtype == DataType::kBool)
    for (size_t i = 0; i < t.byteSize(); ++i) bytes[i] = (rng() & 1) != 0;
  return t;
}

void expectRejected(const std::string& bytes, const std::string& fragment) {
  try {
    parseNpy(bytes, "bad.npy");
    FAIL() << "expected an error mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    std::string msg = e.what();
    EXPECT_NE(msg.find("bad.npy"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

}  // namespace

class NpyRoundTrip : public ::testing::TestWithParam<DataType> {};

TEST_P(NpyRoundTrip, KeepsDtypeShapeAndBytes) {
  for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {5}, {2, 3, 4}, {0, 3}}) {
    HostTensor original = randomTensor(GetParam(), dims, 11);
    std::string bytes = serializeNpy(original);
    size_t headerEnd = bytes.find('\n') + 1;
    EXPECT_EQ(headerEnd % 64, 0u) << "data must start 64-byte aligned, as numpy writes it";
    HostTensor back = parseNpy(bytes, "mem");
    EXPECT_EQ(back.dtype(), original.dtype());
    EXPECT_EQ(back.dims(), original.dims());
    ASSERT_EQ(back.byteSize(), original.byteSize());
    EXPECT_EQ(std::memcmp(back.rawData(), original.rawData(), original.byteSize()), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllNumpyDtypes, NpyRoundTrip,
                         ::testing::Values(DataType::kFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kInt8,
                                           DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUInt8,
                                           DataType::kUInt16, DataType::kUInt32, DataType::kUInt64, DataType::kBool),
                         [](const auto& info) { return std::string(toString(info.param)); });

TEST(Npy, WritesTheHeaderNumpyWrites) {
  std::string bytes = serializeNpy(HostTensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_NE(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
  EXPECT_NE(serializeNpy(HostTensor::fromVector<int64_t>({4}, {1, 2, 3, 4})).find("'shape': (4,)"), std::string::npos);
  EXPECT_NE(serializeNpy(HostTensor::scalar<bool>(true)).find("'descr': '|b1'"), std::string::npos);
}

TEST(Npy, ReadsHandWrittenFiles) {
  HostTensor f = parseNpy(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                                   rawBytes<float>({1.5f, -2.0f, 3.25f, 0.125f})),
                          "a.npy");
  EXPECT_EQ(f.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.data<float>()[2], 3.25f);

  // Big-endian int32 (numpy '>i4'): 0x01020304 stored most significant byte first.
  HostTensor be = parseNpy(npyBytes("{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }",
                                    std::string("\x01\x02\x03\x04", 4)),
                           "b.npy");
  EXPECT_EQ(be.data<int32_t>()[0], 0x01020304);

  // Format 2.0 (uint32 header length), double quotes and extra spaces are all valid.
  HostTensor v2 = parseNpy(npyBytes("{\"shape\": ( 3 , ), \"fortran_order\": False, \"descr\": \"<i8\"}",
                                    rawBytes<int64_t>({7, -8, 9}), 2),
                           "c.npy");
  EXPECT_EQ(v2.toInt64Vector(), (std::vector<int64_t>{7, -8, 9}));

  HostTensor half = parseNpy(npyBytes("{'descr': '<f2', 'fortran_order': False, 'shape': (), }",
                                      rawBytes<uint16_t>({kernels::Float16::fromFloat(-0.75f)})),
                             "d.npy");
  EXPECT_EQ(half.dtype(), DataType::kFloat16);
  EXPECT_EQ(half.toDoubleVector()[0], -0.75);
}

TEST(Npy, NormalizesBoolBytes) {
  HostTensor b = parseNpy(npyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x01\x07", 3)),
                          "e.npy");
  auto* bytes = static_cast<const unsigned char*>(b.rawData());
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[1], 1);
  EXPECT_EQ(bytes[2], 1);
}

TEST(Npy, RejectsBadFilesClearly) {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  expectRejected("", "magic");
  expectRejected("PK\x03\x04 this is a zip file", "magic");
  expectRejected(npyBytes(f4, rawBytes<float>({1, 2})).substr(0, 20), "truncated");
  expectRejected(npyBytes(f4, rawBytes<float>({1, 2}), 4), "version");
  expectRejected(npyBytes(f4, rawBytes<float>({1})), "holds 4 data bytes, but shape 2 of float32 needs 8");
  expectRejected(npyBytes(f4, rawBytes<float>({1, 2, 3})), "needs 8");
  expectRejected(npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", rawBytes<float>({1, 2})),
                 "Fortran");
  expectRejected(npyBytes("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')),
                 "object arrays");
  expectRejected(npyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0')),
                 "structured");
  expectRejected(npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')), "<c8");
  expectRejected(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", ""), "shape");
  expectRejected(npyBytes("{'descr': '<f4', 'fortran_order': False}", ""), "lacks");
  expectRejected(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", rawBytes<float>({1, 2})),
                 "malformed");
}

TEST(Npy, RejectsAbsurdShapesBeforeAllocating) {
  std::string huge = "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }";
  expectRejected(npyBytes(huge, std::string(16, '\0')), "absurdly large");
  expectRejected(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""),
                 "absurdly large");
}

TEST(Npy, RefusesDtypesNumpyLacks) {
  try {
    serializeNpy(HostTensor(DataType::kBFloat16, {2}));
    FAIL() << "bfloat16 has no numpy dtype";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
  }
}

TEST(Npy, FileRoundTripIsAtomicAndReportsBadPaths) {
  auto dir = std::filesystem::temp_directory_path() / ("kiln_npy_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "t.npy").string();
  HostTensor t = HostTensor::fromVector<int32_t>({3}, {4, -5, 6});
  writeNpyFile(t, path);
  EXPECT_EQ(readNpyFile(path).toInt64Vector(), (std::vector<int64_t>{4, -5, 6}));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1) << "no temporary file may remain";

  std::string missingDir = (dir / "no_such_folder" / "t.npy").string();
  EXPECT_THROW(writeNpyFile(t, missingDir), Error);
  try {
    readNpyFile((dir / "absent.npy").string());
    FAIL() << "reading a missing file must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIoError);
    EXPECT_NE(std::string(e.what()).find("absent.npy"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}
