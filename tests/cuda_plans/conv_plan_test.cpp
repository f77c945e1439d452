// The CUDA backend's Conv / ConvTranspose planning (backends/cuda/ops/conv_plan.h) run with
// cuDNN's arithmetic and the pad kernel emulated, against the CPU kernels: uneven pads padded
// before cuDNN, transposed convolutions written directly or cropped from the uncropped result,
// groups, dilations, strides, auto_pad, output_padding and output_shape, 1-D to 3-D.
#include "backends/common/conv_geometry.h"
#include "backends/cuda/ops/conv_plan.h"
#include "cuda_plans/library_emulation.h"

#include <kernels/cpu/conv/conv.h>
#include <kiln/error.h>
#include <kiln/shape.h>

#include <gtest/gtest.h>

#include <cmath>

using namespace kiln;
using namespace kiln::cuda;
using kiln::test::countOf;

namespace {

struct Case {
  std::string name;
  std::vector<int64_t> x, w;
  std::vector<std::pair<std::string, std::vector<int64_t>>> ints;
  int64_t group = 1;
  std::string autoPad;
  bool padsInput = false, cropsOutput = false;  // what the plan is expected to add around cuDNN
};

void checkCase(const Case& c, bool transpose) {
  SCOPED_TRACE(std::string(transpose ? "ConvTranspose " : "Conv ") + c.name);
  Layer layer;
  layer.name = "conv";
  layer.opType = transpose ? "ConvTranspose" : "Conv";
  layer.opsetVersion = 17;
  for (const auto& [name, values] : c.ints) layer.attributes[name] = values;
  if (c.group != 1) layer.attributes["group"] = c.group;
  if (!c.autoPad.empty()) layer.attributes["auto_pad"] = c.autoPad;
  layer.inputs = {"x", "w", "b"};
  layer.outputs = {"y"};
  const ConvSpec spec = convSpecOf(layer, Precision::kFP32, DataType::kFloat32);
  EXPECT_FALSE(spec.allowTensorOps);  // exact fp32: FMA math, no TF32
  const ConvPlan plan = convPlanOf(layer, spec, c.x, c.w);
  EXPECT_EQ(plan.padInput, c.padsInput);
  EXPECT_EQ(plan.cropOutput, c.cropsOutput);
  const kernels::ConvShape shape =
      transpose ? transposeConvShape(layer, c.x, c.w) : forwardConvShape(layer, c.x, c.w);
  std::vector<int64_t> outDims{shape.batch, shape.outChannels};
  const size_t rank = c.x.size() - 2, first = size_t(kernels::kMaxSpatialRank) - rank;
  for (size_t a = 0; a < rank; ++a) outDims.push_back(transpose ? shape.window.in[first + a] : shape.window.out[first + a]);
  ASSERT_EQ(plan.outputDims, outDims);
  const auto x = test::randomValues(countOf(c.x), 1), w = test::randomValues(countOf(c.w), 2);
  const auto bias = test::randomValues(outDims[1], 3);
  std::vector<float> want(size_t(countOf(outDims)));
  if (transpose) kernels::convTranspose<float>(shape, x.data(), w.data(), bias.data(), want.data());
  else kernels::convolution<float>(shape, x.data(), w.data(), bias.data(), want.data());
  // The step: pad, cuDNN, crop, then the bias as the epilogue adds it ([M, 1, ...] broadcast).
  const std::vector<float> in = plan.padInput ? test::emulateZeroPad(x, c.x, plan.padBegin, plan.problem.x) : x;
  std::vector<float> y = test::emulateCudnnConvolution(plan.problem, in, w);
  if (plan.cropOutput) y = test::emulateZeroPad(y, plan.problem.y, plan.cropBegin, plan.outputDims);
  ASSERT_EQ(int64_t(y.size()), countOf(outDims));
  for (int64_t i = 0; i < countOf(outDims); ++i) y[size_t(i)] += test::broadcastAt(bias, plan.biasDims, outDims, i);
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, double(std::fabs(y[i] - want[i])));
  EXPECT_LE(worst, 1e-4);
}

TEST(ConvPlan, ForwardConvolutions) {
  const std::vector<Case> cases = {
      {"1-D", {2, 3, 17}, {4, 3, 3}, {{"pads", {1, 1}}}},
      {"1-D strided, uneven pads", {1, 5, 20}, {6, 5, 4}, {{"pads", {2, 1}}, {"strides", {3}}}, 1, "", true},
      {"2-D", {1, 3, 9, 11}, {5, 3, 3, 3}, {{"pads", {1, 1, 1, 1}}}},
      {"2-D no pads", {3, 4, 7, 6}, {2, 4, 2, 3}, {}},
      {"2-D strided and dilated",
       {2, 3, 13, 12},
       {4, 3, 3, 2},
       {{"strides", {2, 3}}, {"dilations", {2, 1}}, {"pads", {2, 1, 2, 1}}}},
      {"2-D uneven pads", {1, 2, 8, 9}, {3, 2, 3, 3}, {{"pads", {0, 1, 2, 0}}}, 1, "", true},
      {"2-D grouped", {2, 6, 8, 7}, {9, 2, 3, 3}, {{"pads", {1, 1, 1, 1}}}, 3},
      {"2-D depthwise", {1, 8, 10, 9}, {8, 1, 3, 3}, {{"pads", {1, 1, 1, 1}}}, 8},
      {"2-D depthwise x2, strided", {1, 5, 11, 11}, {10, 1, 3, 3}, {{"strides", {2, 2}}}, 5},
      {"2-D 1x1", {1, 16, 7, 5}, {24, 16, 1, 1}, {}},
      {"2-D SAME_UPPER stride 2", {1, 3, 10, 7}, {4, 3, 3, 3}, {{"strides", {2, 2}}}, 1, "SAME_UPPER", true},
      {"2-D SAME_LOWER", {1, 3, 6, 6}, {2, 3, 4, 4}, {}, 1, "SAME_LOWER", true},
      {"2-D VALID", {1, 3, 9, 8}, {2, 3, 3, 3}, {{"strides", {2, 1}}}, 1, "VALID"},
      {"3-D", {1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {{"pads", {1, 1, 1, 1, 1, 1}}}},
      {"3-D strided, uneven pads, grouped",
       {2, 4, 6, 7, 5},
       {6, 2, 2, 3, 3},
       {{"strides", {1, 2, 2}}, {"pads", {0, 1, 0, 1, 0, 2}}},
       2,
       "",
       true},
  };
  for (const Case& c : cases) checkCase(c, false);
}

TEST(ConvPlan, TransposedConvolutions) {
  const std::vector<Case> cases = {
      {"1-D", {2, 4, 9}, {4, 3, 3}, {{"pads", {1, 1}}}},
      {"2-D", {1, 4, 5, 6}, {4, 3, 3, 3}, {}},
      {"2-D strided, output_padding",
       {1, 4, 5, 6},
       {4, 3, 3, 3},
       {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}, {"output_padding", {1, 1}}}},
      {"2-D uneven pads", {2, 3, 6, 5}, {3, 2, 3, 4}, {{"strides", {2, 1}}, {"pads", {0, 2, 1, 0}}}, 1, "", false, true},
      {"2-D output_shape", {1, 2, 4, 4}, {2, 3, 3, 3}, {{"strides", {2, 2}}, {"output_shape", {10, 8}}}, 1, "", false,
       true},
      {"2-D grouped, dilated", {1, 6, 5, 7}, {6, 2, 3, 3}, {{"dilations", {2, 1}}, {"pads", {1, 0, 1, 0}}}, 3},
      {"2-D depthwise strided", {1, 4, 6, 6}, {4, 1, 4, 4}, {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}}, 4},
      {"2-D SAME_UPPER stride 2", {1, 3, 5, 7}, {3, 2, 3, 3}, {{"strides", {2, 2}}}, 1, "SAME_UPPER", false, true},
      {"2-D SAME_LOWER stride 2", {1, 3, 5, 7}, {3, 2, 3, 3}, {{"strides", {2, 2}}}, 1, "SAME_LOWER"},
      {"2-D output_padding beyond the kernel",
       {1, 2, 3, 3},
       {2, 2, 1, 1},
       {{"strides", {3, 3}}, {"output_padding", {2, 1}}}},
      {"3-D", {1, 2, 3, 4, 5}, {2, 3, 3, 3, 2}, {{"strides", {2, 1, 2}}, {"pads", {1, 0, 1, 1, 0, 0}}}},
      {"2-D big uneven pads", {1, 2, 6, 6}, {2, 2, 3, 3}, {{"strides", {2, 2}}, {"pads", {3, 0, 2, 4}}}, 1, "", false,
       true},
      {"2-D output_shape past the result", {1, 2, 3, 3}, {2, 2, 3, 3}, {{"strides", {2, 2}}, {"output_shape", {9, 8}}},
       1, "", false, true},
  };
  for (const Case& c : cases) checkCase(c, true);
}

TEST(ConvPlan, PrecisionsAndRefusals) {
  Layer layer;
  layer.name = "conv";
  layer.opType = "Conv";
  layer.inputs = {"x", "w"};
  layer.outputs = {"y"};
  EXPECT_TRUE(convSpecOf(layer, Precision::kTF32, DataType::kFloat32).allowTensorOps);
  EXPECT_EQ(convSpecOf(layer, Precision::kFP16, DataType::kFloat32).storage, DataType::kFloat16);
  const ConvSpec spec = convSpecOf(layer, Precision::kFP32, DataType::kFloat32);
  EXPECT_THROW(convPlanOf(layer, spec, {1, 3, 4, 4, 4, 4}, {2, 3, 1, 1, 1, 1}), Error);  // 4 spatial dims
  EXPECT_THROW(convPlanOf(layer, spec, {1, 4, 8, 8}, {2, 3, 3, 3}), Error);              // channels do not fit
}

}  // namespace
