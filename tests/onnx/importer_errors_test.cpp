// The importer on broken models: every case ends in one kiln::Error that names the problem,
// never a crash.
#include <kiln/error.h>
#include <kiln/onnx_importer.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

using namespace kiln;
using kiln::test::ModelBuilder;

namespace {

Error importError(const std::function<void()>& import) {
  try {
    import();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return Error(ErrorCode::kInternal, "");
}

Error importBytesError(const std::string& bytes) {
  return importError([&] { OnnxImporter().importBytes(bytes); });
}

void expectMentions(const Error& e, const std::string& fragment) {
  EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
}

ModelBuilder identityModel() {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2, 3});
  mb.node("Identity", {"x"}, {"y"});
  mb.output("y");
  return mb;
}

// A temp folder holding model.onnx whose initializer 'w' (4 floats) lives in external data.
class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kiln_extdata_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string writeModel(const std::string& location, const std::string& offset, const std::string& length) {
    ModelBuilder mb;
    mb.input("x", onnx::TensorProto::FLOAT, {4});
    mb.node("Identity", {"w"}, {"y"});
    mb.output("y");
    mb.externalInitializer("w", onnx::TensorProto::FLOAT, {4},
                           {{"location", location}, {"offset", offset}, {"length", length}});
    std::string path = (dir_ / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << mb.bytes();
    return path;
  }
  void writeWeights(size_t bytes) { std::ofstream(dir_ / "weights.bin", std::ios::binary) << std::string(bytes, '\x01'); }

  std::filesystem::path dir_;
};

}  // namespace

TEST(ImporterErrors, TruncatedModel) {
  std::string bytes = identityModel().bytes();
  for (size_t keep : {size_t(1), bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    Error e = importBytesError(bytes.substr(0, keep));
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << "truncated to " << keep << " bytes: " << e.what();
  }
}

TEST(ImporterErrors, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(1 + rng() % 512, '\0');
    for (char& c : bytes) c = char(rng());
    try {
      OnnxImporter().importBytes(bytes);
    } catch (const Error&) {
      // A clear error is the expected outcome; the test is that nothing else happens.
    }
  }
}

TEST(ImporterErrors, NotAModelAtAll) {
  expectMentions(importBytesError("\x93NUMPY\x01\x00 a numpy file, not a model"), "not a valid ONNX model");
  Error empty = importBytesError("");
  expectMentions(empty, "empty");
  Error missing = importError([] { OnnxImporter().importFile("/nonexistent/kiln/model.onnx"); });
  EXPECT_EQ(missing.code(), ErrorCode::kIoError);
  expectMentions(missing, "/nonexistent/kiln/model.onnx");
}

TEST(ImporterErrors, CycleNamesANode) {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2});
  mb.node("Identity", {"b"}, {"a"}, "first");
  mb.node("Identity", {"a"}, {"b"}, "second");
  mb.output("a");
  Error e = importBytesError(mb.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  expectMentions(e, "cycle");
}

TEST(ImporterErrors, DanglingTensorName) {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2});
  mb.node("Identity", {"nowhere"}, {"y"}, "reader");
  mb.output("y");
  Error e = importBytesError(mb.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  expectMentions(e, "nowhere");
  expectMentions(e, "reader");

  ModelBuilder unproduced = identityModel();
  unproduced.output("ghost");
  expectMentions(importBytesError(unproduced.bytes()), "ghost");
}

TEST(ImporterErrors, AbsurdDeclaredSizes) {
  ModelBuilder mb = identityModel();
  auto* w = mb.model().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) w->add_dims(int64_t(1) << 40);
  Error e = importBytesError(mb.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  expectMentions(e, "'w'");
  expectMentions(e, "absurdly large");

  ModelBuilder negative = identityModel();
  auto* n = negative.model().mutable_graph()->add_initializer();
  n->set_name("n");
  n->set_data_type(onnx::TensorProto::FLOAT);
  n->add_dims(-3);
  expectMentions(importBytesError(negative.bytes()), "negative");
}

TEST(ImporterErrors, RawDataSizeMismatch) {
  ModelBuilder mb = identityModel();
  auto* w = mb.model().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1000);
  w->set_raw_data(std::string(12, '\0'));
  Error e = importBytesError(mb.bytes());
  expectMentions(e, "raw_data has 12 bytes");
}

TEST(ImporterErrors, SparseInitializerWithBadIndices) {
  ModelBuilder mb = identityModel();
  auto* sparse = mb.model().mutable_graph()->add_sparse_initializer();
  sparse->add_dims(2);
  sparse->add_dims(2);
  auto* values = sparse->mutable_values();
  values->set_name("s");
  values->set_data_type(onnx::TensorProto::FLOAT);
  values->add_dims(2);
  values->add_float_data(1);
  values->add_float_data(2);
  auto* indices = sparse->mutable_indices();
  indices->set_data_type(onnx::TensorProto::INT64);
  indices->add_dims(1);  // two values but only one linear index
  indices->add_int64_data(3);
  Error e = importBytesError(mb.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  expectMentions(e, "'s'");
}

TEST_F(ExternalData, MissingFileNamesThePath) {
  Error e = importError([&] { OnnxImporter().importFile(writeModel("weights.bin", "", "")); });
  EXPECT_EQ(e.code(), ErrorCode::kIoError);
  expectMentions(e, (dir_ / "weights.bin").string());
}

TEST_F(ExternalData, ReadsValidExternalData) {
  writeWeights(64);
  auto net = OnnxImporter().importFile(writeModel("weights.bin", "16", "16"));
  EXPECT_EQ(net->tensor("w").constant->elementCount(), 4);
}

TEST_F(ExternalData, OffsetOrLengthBeyondTheFile) {
  writeWeights(20);
  for (auto [offset, length] : {std::pair{"8", "16"}, {"100", ""}, {"0", "8"}, {"-4", "16"}}) {
    Error e = importError([&] { OnnxImporter().importFile(writeModel("weights.bin", offset, length)); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << offset << "/" << length << ": " << e.what();
    expectMentions(e, "weights.bin");
  }
  Error notNumber = importError([&] { OnnxImporter().importFile(writeModel("weights.bin", "ten", "")); });
  expectMentions(notNumber, "'ten'");
}

TEST_F(ExternalData, LocationMustStayInTheModelFolder) {
  for (const char* location : {"../weights.bin", "/etc/passwd"}) {
    Error e = importError([&] { OnnxImporter().importFile(writeModel(location, "", "")); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << e.what();
    expectMentions(e, location);
  }
}
