// onnxruntime's com.microsoft.MatMulNBits (its int4 export: MatMulNBitsQuantizer), as its
// ContribOperators.md states it: Y = A · dequantize(B)ᵀ + bias, B [N, k_blocks, blob_size] uint8
// holding N rows of K values quantized in blocks of block_size along K, packed low nibble first,
// each value (q - zero_point) * scale with the block's scale and zero point (2^(bits - 1) when
// absent). Kiln reads bits = 4 with float32 A, scales float32 or float16, zero points absent or
// packed uint8, no g_idx and no prepacked B; accuracy_level is a hint Kiln does not need (it
// computes in fp32). The builder turns every MatMulNBits into kiln.WeightOnlyMatMul, whose format
// is the same but for the signedness of the nibbles (int4FromMatMulNBits).
#include "weight_only.h"

#include "op_families.h"
#include "op_schema.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/quant/int4_weight_format.h>

#include <kiln/error.h>

namespace kiln {
namespace weight_only {

std::optional<NBitsShape> readNBitsShape(const Layer& layer, std::string& why) {
  NBitsShape s{layer.attrInt("K", 0), layer.attrInt("N", 0), layer.attrInt("block_size", 0)};
  const int64_t bits = layer.attrInt("bits", 4);
  if (s.k <= 0 || s.n <= 0)
    why = "attributes K and N must be positive, got K = " + std::to_string(s.k) + ", N = " + std::to_string(s.n);
  else if (bits != 4)
    why = "bits = " + std::to_string(bits) + ": Kiln reads 4-bit MatMulNBits only";
  else if (s.blockSize < 16 || (s.blockSize & (s.blockSize - 1)) != 0)
    why = "block_size must be a power of 2 and at least 16, got " + std::to_string(s.blockSize);
  else if (layer.attrInt("weight_prepacked", 0) != 0)
    why = "B is prepacked for a GPU (weight_prepacked = " + std::to_string(layer.attrInt("weight_prepacked", 0)) +
          "); Kiln reads the plain layout: export without prepacking";
  else if (layer.hasInput(kNBitsGroupIndexInput))
    why = "it has a g_idx input (deprecated act-order quantization), which Kiln does not support";
  else
    why.clear();
  return why.empty() ? std::optional<NBitsShape>(s) : std::nullopt;
}

namespace {

int64_t blockCount(const NBitsShape& s) { return kernels::int4GroupCount(s.k, s.blockSize); }

// Bytes of packed zero points per row: two blocks a byte.
int64_t zeroPointBytes(const NBitsShape& s) { return (blockCount(s) + 1) / 2; }

bool isFloatType(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16; }

}  // namespace

Int4Tensors int4FromMatMulNBits(const NBitsShape& s, const HostTensor& b, const HostTensor& scales,
                                const HostTensor* zeroPoints, const std::string& where) {
  const int64_t blocks = blockCount(s);
  auto fail = [&](const std::string& why) { throw Error(ErrorCode::kInvalidModel, where + ": " + why); };
  if (b.dtype() != DataType::kUInt8 || b.dims() != std::vector<int64_t>{s.n, blocks, s.blockSize / 2})
    fail("B must be uint8 [N, k_blocks, block_size / 2] = " + Shape::fromDims({s.n, blocks, s.blockSize / 2}).toString());
  if (scales.elementCount() != s.n * blocks || (scales.dtype() != DataType::kFloat32 && scales.dtype() != DataType::kFloat16))
    fail("scales must be " + std::to_string(s.n * blocks) + " float32 or float16 values ([N, k_blocks])");
  Int4Tensors out;
  out.k = s.k;
  out.n = s.n;
  out.groupSize = s.blockSize;
  out.packed = HostTensor(DataType::kUInt8, b.dims());
  for (int64_t i = 0; i < b.elementCount(); ++i)
    out.packed.data<uint8_t>()[i] = kernels::signedInt4PairFromUnsigned(b.data<uint8_t>()[i]);
  out.scales = HostTensor(DataType::kFloat32, {s.n, blocks});
  for (int64_t i = 0; i < s.n * blocks; ++i)
    out.scales.data<float>()[i] = scales.dtype() == DataType::kFloat32
                                      ? scales.data<float>()[i]
                                      : float(scales.data<kernels::Float16>()[i]);
  if (zeroPoints) {
    if (isFloatType(zeroPoints->dtype()))
      fail("its zero points are floats (the unpacked form), which Kiln does not take; quantize with uint8 zero "
           "points (packed) or symmetrically (none)");
    if (zeroPoints->dtype() != DataType::kUInt8 || zeroPoints->elementCount() != s.n * zeroPointBytes(s))
      fail("zero_points must be packed uint8 [N, ceil(k_blocks / 2)] = " +
           Shape::fromDims({s.n, zeroPointBytes(s)}).toString());
    HostTensor zeros(DataType::kInt8, {s.n, blocks});
    for (int64_t row = 0; row < s.n; ++row)
      for (int64_t block = 0; block < blocks; ++block) {
        const uint8_t byte = zeroPoints->data<uint8_t>()[row * zeroPointBytes(s) + block / 2];
        const int zero = (byte >> (4 * (block % 2))) & 0xF;  // uint4 in [0, 15]
        zeros.data<int8_t>()[row * blocks + block] = int8_t(zero - 8);
      }
    out.zeros = std::move(zeros);
  }
  return out;
}

}  // namespace weight_only

namespace {

using namespace weight_only;

void inferMatMulNBits(InferenceContext& ctx) {
  std::string why;
  const auto s = readNBitsShape(ctx.layer(), why);
  if (!s) ctx.fail(why);
  const int64_t blocks = kernels::int4GroupCount(s->k, s->blockSize);
  if (ctx.inputType(0) != DataType::kFloat32)
    ctx.fail("A is " + std::string(toString(ctx.inputType(0))) +
             "; Kiln runs MatMulNBits on float32 A (export the int4 model from the float32 one)");
  if (ctx.inputType(1) != DataType::kUInt8) ctx.fail("B (input 1) must be uint8");
  const Shape& b = ctx.inputShape(1);
  if (b.hasRank() && b.isFullyKnown() && b.knownDims() != std::vector<int64_t>{s->n, blocks, s->blockSize / 2})
    ctx.fail("B has shape " + b.toString() + ", expected [N, k_blocks, block_size / 2] = " +
             Shape::fromDims({s->n, blocks, s->blockSize / 2}).toString());
  const DataType scaleType = ctx.inputType(kNBitsScalesInput);
  if (scaleType != DataType::kFloat32 && scaleType != DataType::kFloat16)
    ctx.fail("scales must be float32 or float16, got " + std::string(toString(scaleType)));
  if (ctx.hasInput(kNBitsZeroPointsInput)) {
    const DataType z = ctx.inputType(kNBitsZeroPointsInput);
    if (isFloatType(z))
      ctx.fail("its zero points are " + std::string(toString(z)) +
               " (the unpacked form), which Kiln does not take; quantize with uint8 zero points (packed) or "
               "symmetrically (none)");
    if (z != DataType::kUInt8) ctx.fail("zero_points must be packed uint8, got " + std::string(toString(z)));
  }
  if (ctx.hasInput(kNBitsBiasInput) && ctx.inputType(kNBitsBiasInput) != DataType::kFloat32)
    ctx.fail("the bias must be float32 as A is");
  const Shape& a = ctx.inputShape(0);
  if (!a.hasRank()) return ctx.setOutput(0, DataType::kFloat32, Shape::unknownRank());
  if (a.rank() == 0) ctx.fail("A must have rank 1 or more");
  if (a[a.rank() - 1].isKnown() && a[a.rank() - 1].value() != s->k)
    ctx.fail("A has shape " + a.toString() + ": its last dim must be K = " + std::to_string(s->k));
  std::vector<Dim> dims(a.dims().begin(), a.dims().end() - 1);
  dims.push_back(Dim(s->n));
  ctx.setOutput(0, DataType::kFloat32, Shape(std::move(dims)));
}

}  // namespace

void registerMatMulNBitsSchema(OpSchemaRegistry& registry) {
  registry.add({kMicrosoftDomain, kMatMulNBits, inferMatMulNBits, 3, 6});
}

}  // namespace kiln
