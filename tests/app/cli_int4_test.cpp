// `kiln build --int4-weights [--int4-group-size N]` end to end: the large MatMul's weights packed,
// the small one kept float with the reason `kiln inspect` prints, a smaller plan; group sizes other
// than 32, 64 and 128, and a group size without --int4-weights, refused with no plan written.
#include "app/cli_fixture.h"

#include <gtest/gtest.h>

#include <filesystem>

using kiln::test::Cli;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;
namespace fs = std::filesystem;

namespace {

class CliInt4 : public Cli {
 protected:
  // x [4, 256] -> MatMul (256 x 64) -> Relu -> MatMul (64 x 3, small) -> y.
  std::string model() {
    ModelBuilder mb;
    mb.input("x", kFloat, {4, 256})
        .initializer("w1", kiln::test::randomFloats({256, 64}, 1))
        .initializer("w2", kiln::test::randomFloats({64, 3}, 2))
        .output("y");
    mb.node("MatMul", {"x", "w1"}, {"h"}, "wide");
    mb.node("Relu", {"h"}, {"r"}, "relu");
    mb.node("MatMul", {"r", "w2"}, {"y"}, "small");
    return save("mlp.onnx", mb);
  }
};

}  // namespace

TEST_F(CliInt4, PacksTheLargeWeightsAndInspectSaysWhyTheSmallOnesStayFloat) {
  const std::string onnx = model();
  auto fp32 = kiln({"build", onnx, "--save", path("out/fp32.plan")});
  ASSERT_EQ(fp32.exitCode, 0) << fp32.err;
  auto r = kiln({"build", onnx, "--save", path("out/int4.plan"), "--int4-weights", "--int4-group-size", "64"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("int4 weights: 1 layer(s) (groups of 64); 1 MatMul/Gemm layer(s) keep float weights"),
            std::string::npos)
      << r.out;
  EXPECT_LT(fs::file_size(path("out/int4.plan")), fs::file_size(path("out/fp32.plan")) / 2);
  auto text = kiln({"inspect", path("out/int4.plan")});
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("kiln.WeightOnlyMatMul"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not int4: its weights hold 192 values (K 64 x N 3)"), std::string::npos) << text.out;
}

TEST_F(CliInt4, RefusesOtherGroupSizesAndAGroupSizeAlone) {
  const std::string onnx = model();
  expectFailure({"build", onnx, "--save", path("out/a.plan"), "--int4-weights", "--int4-group-size", "48"}, 2,
                {"--int4-group-size) is 48; use 32, 64 or 128"});
  expectFailure({"build", onnx, "--save", path("out/a.plan"), "--int4-group-size", "64"}, 2,
                {"--int4-group-size needs --int4-weights"});
}
