// kiln.int8conv / kiln.fp8conv tactic ids and problems (quantized_conv_kernel.h).
#include "quantized_conv_kernel.h"

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

constexpr const char* kInt8Prefix = "kiln.int8conv.";
constexpr const char* kFp8Prefix = "kiln.fp8conv.";

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

bool isKilnConvTactic(const std::string& tacticId) {
  return startsWith(tacticId, kInt8Prefix) || startsWith(tacticId, kFp8Prefix);
}

std::optional<k::Int8ConvTile> kilnConvTileOf(const std::string& tacticId) {
  if (!isKilnConvTactic(tacticId)) return std::nullopt;
  const size_t dot = tacticId.rfind(".t");
  if (dot == std::string::npos || dot + 2 >= tacticId.size()) return std::nullopt;
  int tile = 0;
  for (size_t i = dot + 2; i < tacticId.size(); ++i) {
    if (tacticId[i] < '0' || tacticId[i] > '9') return std::nullopt;
    tile = tile * 10 + (tacticId[i] - '0');
    if (tile >= k::kInt8ConvTiles) return std::nullopt;
  }
  return k::Int8ConvTile(tile);
}

std::string kilnConvTacticId(bool fp8, const std::string& storage, k::Int8ConvTile tile) {
  return std::string(fp8 ? kFp8Prefix : kInt8Prefix) + storage + ".t" + std::to_string(int(tile));
}

k::Int8ConvProblem kilnConvProblemOf(const ConvGraphProblem& p) {
  k::Int8ConvProblem kp;
  kp.fp8 = p.quantized == QuantizedOperands::kFp8;
  kp.batch = p.x[0], kp.channels = p.x[1], kp.inH = p.x[2], kp.inW = p.x[3];
  kp.outChannels = p.y[1], kp.outH = p.y[2], kp.outW = p.y[3];
  kp.kernelH = p.w[2], kp.kernelW = p.w[3];
  kp.strideH = p.strides[0], kp.strideW = p.strides[1];
  kp.dilationH = p.dilations[0], kp.dilationW = p.dilations[1];
  kp.padTop = p.prePads[0], kp.padLeft = p.prePads[1];
  return kp;
}

std::vector<k::Int8ConvTile> kilnConvTiles(const ConvGraphProblem& p, int sm) {
  const bool fp8 = p.quantized == QuantizedOperands::kFp8;
  if (p.quantized == QuantizedOperands::kNone || sm < (fp8 ? 89 : 80)) return {};
  k::Int8ConvProblem kp = kilnConvProblemOf(p);
  // Stand-in pointers: the refusal looks at their alignment only.
  alignas(16) static const uint8_t aligned[16] = {};
  static const float multipliers[1] = {};
  kp.x = kp.w = aligned, kp.multipliers = multipliers;
  if (!k::int8ConvTakes(kp)) return {};
  if (kp.outChannels <= 64) return {k::Int8ConvTile::k256x64, k::Int8ConvTile::k128x64, k::Int8ConvTile::k64x64};
  return {k::Int8ConvTile::k128x128, k::Int8ConvTile::k256x64, k::Int8ConvTile::k128x64, k::Int8ConvTile::k64x64};
}

}  // namespace kiln::cuda
