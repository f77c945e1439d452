// External data past 2 GiB and 4 GiB: offsets beyond INT32_MAX and UINT32_MAX and a tensor of more
// than 2^31 bytes, the cases 32-bit offset arithmetic gets wrong. The data file is sparse (its holes
// take no disk), so the 5 GiB file costs a few kilobytes and milliseconds; the test skips, saying
// why, on a filesystem that cannot make sparse files.
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include "common/test_models.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

using namespace kiln;
using kiln::test::ModelBuilder;

namespace {

constexpr int64_t kGiB = int64_t(1) << 30;
constexpr int64_t kFileBytes = 5 * kGiB;
// More than 2^31 bytes: its size and every offset inside it overflow 32-bit arithmetic.
constexpr int64_t kHugeBytes = 2 * kGiB + 128;
constexpr int64_t kPast2GiB = 2 * kGiB + 4096;     // > INT32_MAX, 64-byte aligned (mapped in place)
constexpr int64_t kPast4GiB = 4 * kGiB + 4096 + 4;  // > UINT32_MAX, unaligned (copied)
static_assert(kPast2GiB > INT32_MAX && kPast4GiB > int64_t(UINT32_MAX) && kHugeBytes > INT32_MAX);

// Where an initializer's bytes lie in weights.bin; length is left out of the model when not given.
struct Placement {
  std::string name;
  int32_t onnxType;
  std::vector<int64_t> dims;
  std::string offset;
  std::optional<std::string> length;
};

void addExternalInitializer(ModelBuilder& mb, const Placement& p) {
  mb.externalInitializer(p.name, p.onnxType, p.dims,
                         {{"location", "weights.bin"}, {"offset", p.offset}, {"length", p.length.value_or("")}});
}

std::string errnoText() { return std::strerror(errno); }

// A temp folder with a sparse weights.bin of kFileBytes; tests pwrite real bytes at large offsets.
class LargeExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kiln_large_extdata_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    if (auto why = sparseFilesUnsupported()) GTEST_SKIP() << "cannot make sparse files in " << dir_ << ": " << *why;
    fd_ = ::open(weightsPath().c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd_, 0) << weightsPath() << ": " << errnoText();
    if (::ftruncate(fd_, kFileBytes) != 0)
      GTEST_SKIP() << "cannot make a " << kFileBytes << "-byte sparse file in " << dir_ << ": " << errnoText();
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    std::filesystem::remove_all(dir_);
  }

  // Writes a holey 1 MiB probe file and checks that the hole took no disk.
  std::optional<std::string> sparseFilesUnsupported() const {
    std::string probe = (dir_ / "probe.bin").string();
    int fd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot create " + probe + ": " + errnoText();
    const char byte = 1;
    std::optional<std::string> why;
    struct stat st {};
    if (::pwrite(fd, &byte, 1, (1 << 20) - 1) != 1 || ::fstat(fd, &st) != 0) why = errnoText();
    else if (st.st_blocks * 512 >= (1 << 20)) why = "a 1 MiB file with a hole occupies " + std::to_string(st.st_blocks * 512) + " bytes";
    ::close(fd);
    std::filesystem::remove(probe);
    return why;
  }

  void writeAt(int64_t offset, const void* data, size_t bytes) {
    ASSERT_EQ(::pwrite(fd_, data, bytes, off_t(offset)), ssize_t(bytes)) << "at offset " << offset << ": " << errnoText();
  }
  void writeAt(int64_t offset, const HostTensor& t) { writeAt(offset, t.rawData(), t.byteSize()); }

  std::string weightsPath() const { return (dir_ / "weights.bin").string(); }
  std::string writeModel(const ModelBuilder& mb) const {
    std::string path = (dir_ / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << mb.bytes();
    return path;
  }

  std::filesystem::path dir_;
  int fd_ = -1;
};

void expectSameBytes(const HostTensor& imported, const HostTensor& written, const std::string& name) {
  ASSERT_EQ(imported.dtype(), written.dtype()) << name;
  ASSERT_EQ(imported.dims(), written.dims()) << name;
  EXPECT_EQ(std::memcmp(imported.rawData(), written.rawData(), written.byteSize()), 0) << name;
}

}  // namespace

TEST_F(LargeExternalData, ImportsAndRunsTensorsPast2And4GiB) {
  // out = (x + a) * b + c, with a past 2 GiB, b past 4 GiB and c the file's last 16 bytes (no length).
  const HostTensor a = test::randomFloats({3, 4}, 11), b = test::randomFloats({4}, 12, 0.5f, 2.0f),
                   c = test::randomFloats({4}, 13);
  writeAt(kPast2GiB, a);
  writeAt(kPast4GiB, b);
  writeAt(kFileBytes - 16, c);
  // The huge tensor: random bytes at both ends, the hole between them reads as zeros.
  std::mt19937 rng(14);
  std::vector<uint8_t> head(4096), tail(4096);
  for (auto* part : {&head, &tail})
    for (auto& v : *part) v = uint8_t(1 + rng() % 255);
  writeAt(0, head.data(), head.size());
  writeAt(kHugeBytes - int64_t(tail.size()), tail.data(), tail.size());

  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {3, 4});
  mb.node("Add", {"x", "a"}, {"xa"});
  mb.node("Mul", {"xa", "b"}, {"xab"});
  mb.node("Add", {"xab", "c"}, {"out"});
  mb.output("out");
  addExternalInitializer(mb, {"a", onnx::TensorProto::FLOAT, {3, 4}, std::to_string(kPast2GiB), "48"});
  addExternalInitializer(mb, {"b", onnx::TensorProto::FLOAT, {4}, std::to_string(kPast4GiB), "16"});
  addExternalInitializer(mb, {"c", onnx::TensorProto::FLOAT, {4}, std::to_string(kFileBytes - 16), std::nullopt});
  addExternalInitializer(mb, {"huge", onnx::TensorProto::UINT8, {kHugeBytes}, "0", std::to_string(kHugeBytes)});
  auto net = OnnxImporter().importFile(writeModel(mb));

  expectSameBytes(*net->tensor("a").constant, a, "a");
  expectSameBytes(*net->tensor("b").constant, b, "b");
  expectSameBytes(*net->tensor("c").constant, c, "c");
  const HostTensor& huge = *net->tensor("huge").constant;
  ASSERT_EQ(huge.dims(), (std::vector<int64_t>{kHugeBytes}));
  const auto* hugeBytes = huge.data<uint8_t>();
  EXPECT_EQ(std::memcmp(hugeBytes, head.data(), head.size()), 0);
  EXPECT_EQ(std::memcmp(hugeBytes + kHugeBytes - int64_t(tail.size()), tail.data(), tail.size()), 0);
  EXPECT_EQ(hugeBytes[kGiB], 0) << "the hole in the middle reads as zeros";

  const HostTensor x = test::randomFloats({3, 4}, 15);
  const HostTensor out = ReferenceExecutor(net).run({{"x", x}}).at("out").tensor;
  ASSERT_EQ(out.dims(), (std::vector<int64_t>{3, 4}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      const float expected = (x.data<float>()[i * 4 + j] + a.data<float>()[i * 4 + j]) * b.data<float>()[j] + c.data<float>()[j];
      EXPECT_FLOAT_EQ(out.data<float>()[i * 4 + j], expected) << "at [" << i << "," << j << "]";
    }
}

TEST_F(LargeExternalData, RangesPastTheEndNameTheTensorAndTheFile) {
  const std::string fileSize = std::to_string(kFileBytes);
  const std::vector<Placement> broken = {
      {"ends_past_eof", onnx::TensorProto::FLOAT, {4}, std::to_string(kFileBytes - 8), "16"},
      {"no_length_past_eof", onnx::TensorProto::FLOAT, {4}, std::to_string(kFileBytes - 8), std::nullopt},
      {"starts_past_eof", onnx::TensorProto::FLOAT, {4}, std::to_string(kFileBytes + 4 * kGiB), "16"},
      {"offset_near_int64_max", onnx::TensorProto::FLOAT, {4}, std::to_string(INT64_MAX - 8), "16"},
      {"length_near_int64_max", onnx::TensorProto::FLOAT, {4}, std::to_string(kPast4GiB), std::to_string(INT64_MAX)},
      {"huge_past_eof", onnx::TensorProto::UINT8, {kFileBytes}, std::to_string(kGiB), std::nullopt},
  };
  for (const auto& p : broken) {
    ModelBuilder mb;
    mb.input("x", onnx::TensorProto::FLOAT, {4});
    mb.node("Add", {"x", p.name}, {"y"});
    mb.output("y");
    addExternalInitializer(mb, p);
    try {
      OnnxImporter().importFile(writeModel(mb));
      ADD_FAILURE() << p.name << ": expected a kiln::Error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << message;
      EXPECT_NE(message.find("initializer '" + p.name + "'"), std::string::npos) << message;
      EXPECT_NE(message.find(weightsPath()), std::string::npos) << message;
      EXPECT_NE(message.find(fileSize), std::string::npos) << "the message gives the file size: " << message;
    }
  }
}

TEST_F(LargeExternalData, OffsetsBeyondInt64AreRejectedNotWrapped) {
  for (const std::string offset : {"18446744073709551615", "9223372036854775808", "-2147483648", "4294967296x"}) {
    ModelBuilder mb;
    mb.input("x", onnx::TensorProto::FLOAT, {4});
    mb.node("Add", {"x", "w"}, {"y"});
    mb.output("y");
    addExternalInitializer(mb, {"w", onnx::TensorProto::FLOAT, {4}, offset, "16"});
    try {
      OnnxImporter().importFile(writeModel(mb));
      ADD_FAILURE() << offset << ": expected a kiln::Error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << message;
      EXPECT_NE(message.find("initializer 'w'"), std::string::npos) << message;
      EXPECT_NE(message.find("'" + offset + "'"), std::string::npos) << message;
    }
  }
}
