#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

// GPT-2's Conv1D: x [2, 5, 8] viewed as [10, 8], Gemm with W and a bias, viewed back as [2, 5, 12],
// then an activation and the residual-style Add of another [2, 5, 12] input.
ModelBuilder conv1d(bool transB, std::vector<int64_t> outShape = {2, 5, 12}) {
  ModelBuilder mb;
  mb.input("x", F, {2, 5, 8}).input("r", F, {2, 5, 12});
  setInts(mb, "flat", {-1, 8});
  setInts(mb, "back", outShape);
  mb.initializer("w", randomFloats(transB ? std::vector<int64_t>{12, 8} : std::vector<int64_t>{8, 12}, 3));
  mb.initializer("b", randomFloats({12}, 4));
  mb.node("Reshape", {"x", "flat"}, {"x2"}, "view");
  auto& gemm = mb.node("Gemm", {"x2", "w", "b"}, {"g"}, "addmm");
  if (transB) ModelBuilder::setInt(gemm, "transB", 1);
  mb.node("Reshape", {"g", "back"}, {"g3"}, "view_back");
  mb.node("Relu", {"g3"}, {"a"}, "act");
  if (outShape.size() == 3) {
    mb.node("Add", {"a", "r"}, {"y"}, "residual");
  } else {
    mb.node("Identity", {"a"}, {"y"}, "out");
    mb.node("Identity", {"r"}, {"unused"}, "keep_r");
    mb.output("unused");
  }
  mb.output("y");
  return mb;
}

}  // namespace

TEST(UnflattenGemm, LinearLayerOnA3dActivationFusesItsEpilogue) {
  for (bool transB : {false, true}) {
    SCOPED_TRACE(transB ? "transB" : "W as [K, N]");
    auto run = optimize(conv1d(transB), PassManager::standard(2));
    EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedMatMul", 1}}));
    const Layer& fused = onlyLayer(*run.optimized, "kiln.FusedMatMul");
    EXPECT_EQ(fused.inputs[0], "x");
    EXPECT_EQ(fused.attrString("activation"), "Relu");
    EXPECT_TRUE(hasOrigins(fused, {"view", "addmm", "view_back", "act", "residual"}));
    expectSameOutputs(run);
  }
}

TEST(UnflattenGemm, AReshapeToOtherLeadingDimsStays) {
  auto run = optimize(conv1d(false, {10, 12}), createUnflattenGemmPass());
  EXPECT_EQ(countOf(*run.optimized, "Gemm"), 1);
  EXPECT_EQ(countOf(*run.optimized, "MatMul"), 0);
}
