#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;

TEST(OnnxImporter, ImportsIdentityGraphWithSymbolicDims) {
  ModelBuilder mb;
  mb.symbolicInput("x", onnx::TensorProto::FLOAT, {"batch", "3"});
  mb.node("Identity", {"x"}, {"y"}, "id0");
  mb.output("y");
  auto net = OnnxImporter().importBytes(mb.bytes());
  ASSERT_EQ(net->layers().size(), 1u);
  EXPECT_EQ(net->layers()[0].opType, "Identity");
  EXPECT_EQ(net->layers()[0].opsetVersion, 17);
  const Tensor& y = net->tensor("y");
  EXPECT_EQ(y.dtype, DataType::kFloat32);
  ASSERT_TRUE(y.shape.hasRank());
  EXPECT_EQ(y.shape.toString(), "[batch,3]");
}

TEST(OnnxImporter, RunsIdentityOnRandomData) {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2, 3});
  mb.node("Identity", {"x"}, {"y"});
  mb.output("y");
  auto net = OnnxImporter().importBytes(mb.bytes());
  auto x = test::randomFloats({2, 3}, 7);
  auto out = ReferenceExecutor(net).run({{"x", x}});
  const HostTensor& y = out.at("y").tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], x.data<float>()[i]);
}

TEST(OnnxImporter, UnsupportedOpNamesNodeOpDomainAndOpset) {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2});
  mb.node("NoSuchOp", {"x"}, {"y"}, "mystery");
  mb.output("y");
  try {
    OnnxImporter().importBytes(mb.bytes());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(msg.find("mystery"), std::string::npos) << msg;
    EXPECT_NE(msg.find("NoSuchOp"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ai.onnx"), std::string::npos) << msg;
    EXPECT_NE(msg.find("opset 17"), std::string::npos) << msg;
  }
}

TEST(OnnxImporter, LenientImportKeepsUnknownOpsForViewers) {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2});
  mb.node("NoSuchOp", {"x"}, {"y"}, "mystery");
  mb.node("Identity", {"y"}, {"z"}, "after");
  mb.output("z");
  OnnxImportOptions options;
  options.allowUnsupportedOps = true;
  auto net = OnnxImporter(options).importBytes(mb.bytes());
  ASSERT_EQ(net->layers().size(), 2u);
  EXPECT_EQ(net->layers()[0].opType, "NoSuchOp");
  ASSERT_FALSE(net->info().importWarnings.empty());
  EXPECT_NE(net->info().importWarnings[0].find("mystery"), std::string::npos);
  EXPECT_EQ(net->tensor("z").dtype, DataType::kUndefined);  // nothing to infer it from
}
