// The kiln.int8conv / kiln.fp8conv tactics (engine_core/src/backends/cuda/ops/quantized_conv_kernel.h):
// their ids round-trip to the tile (what a saved plan keeps), the step's graph problem becomes the
// kernel's geometry, and the tiles offered follow the device and the layer (no GPU needed).
#include "backends/cuda/ops/quantized_conv_kernel.h"

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::cuda;
namespace k = kiln::kernels::cuda;

namespace {

// A 3x3 stride-2 pad-1 problem: x [2, 48 (padded), 13, 11] -> y [2, outChannels, 7, 6].
ConvGraphProblem problem(int64_t outChannels, QuantizedOperands operands) {
  ConvGraphProblem p;
  p.x = {2, 48, 13, 11}, p.w = {outChannels, 48, 3, 3}, p.y = {2, outChannels, 7, 6};
  p.prePads = {1, 1}, p.postPads = {1, 1}, p.strides = {2, 2}, p.dilations = {1, 1};
  p.quantized = operands;
  return p;
}

TEST(KilnConvTactic, IdsRoundTripToTheirTile) {
  for (bool fp8 : {false, true})
    for (int t = 0; t < k::kInt8ConvTiles; ++t) {
      const std::string id = kilnConvTacticId(fp8, "fp16", k::Int8ConvTile(t));
      EXPECT_EQ(id, std::string(fp8 ? "kiln.fp8conv" : "kiln.int8conv") + ".fp16.t" + std::to_string(t));
      EXPECT_TRUE(isKilnConvTactic(id));
      ASSERT_TRUE(kilnConvTileOf(id).has_value()) << id;
      EXPECT_EQ(int(*kilnConvTileOf(id)), t);
    }
  EXPECT_FALSE(kilnConvTileOf("cudnn.int8conv.fp32.c0").has_value());
  EXPECT_FALSE(kilnConvTileOf("kiln.int8conv.fp32.t9").has_value());
  EXPECT_FALSE(kilnConvTileOf("kiln.int8conv.fp32.tx").has_value());
  EXPECT_FALSE(kilnConvTileOf("kiln.int8conv.fp32").has_value());
}

TEST(KilnConvTactic, ProblemCarriesTheGeometry) {
  const k::Int8ConvProblem kp = kilnConvProblemOf(problem(64, QuantizedOperands::kFp8));
  EXPECT_TRUE(kp.fp8);
  EXPECT_EQ(kp.batch, 2);
  EXPECT_EQ(kp.channels, 48);
  EXPECT_EQ(kp.inH, 13);
  EXPECT_EQ(kp.inW, 11);
  EXPECT_EQ(kp.outChannels, 64);
  EXPECT_EQ(kp.outH, 7);
  EXPECT_EQ(kp.outW, 6);
  EXPECT_EQ(kp.kernelH, 3);
  EXPECT_EQ(kp.strideW, 2);
  EXPECT_EQ(kp.padTop, 1);
  EXPECT_EQ(kp.dilationH, 1);
}

TEST(KilnConvTactic, TilesFollowTheDeviceAndTheLayer) {
  EXPECT_EQ(kilnConvTiles(problem(64, QuantizedOperands::kInt8), 90).size(), 3u);   // no 128-channel tile
  EXPECT_EQ(kilnConvTiles(problem(144, QuantizedOperands::kInt8), 90).size(), 4u);  // all four
  EXPECT_TRUE(kilnConvTiles(problem(64, QuantizedOperands::kInt8), 75).empty());    // no int8 mma.sync m16n8k32
  EXPECT_TRUE(kilnConvTiles(problem(64, QuantizedOperands::kFp8), 86).empty());     // no e4m3 mma before sm_89
  EXPECT_EQ(kilnConvTiles(problem(64, QuantizedOperands::kFp8), 89).size(), 3u);
  EXPECT_TRUE(kilnConvTiles(problem(64, QuantizedOperands::kNone), 90).empty());
  EXPECT_TRUE(kilnConvTiles(problem(40, QuantizedOperands::kInt8), 90).empty());  // channels off 16
}

}  // namespace
