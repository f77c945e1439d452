// The flash-attention kernels against the CPU's attention kernel (fp16 / bf16: on the same rounded
// inputs; fp32 storage with TF32 products: on the fp32 inputs): odd and tile-edge lengths, Lq != Lk, every padded head
// dim and sizes between them, K given transposed, masks of several broadcast shapes and types (rows and whole
// batch-heads hidden by -inf), tensors laid out with strides (a packed QKV), misaligned pointers, both query tiles. The
// error allowed is relative to the output's scale: fp16 and bf16 round P for the second product, and the output; TF32
// rounds Q, K, V and P to 10 mantissa bits.
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/attention/attention.h>
#include <kernels/cuda/attention/flash_attention.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace kiln::kernels::cuda;
using namespace kiln::test;

namespace {

constexpr float kHidden = -std::numeric_limits<float>::infinity();

struct FlashCase {
  std::vector<int64_t> batch;  // leading dims
  int64_t lq, lk, d, dv;
  bool kTransposed = false;
  std::vector<int64_t> mask;  // right-aligned against [batch..., Lq, Lk]; empty: none
  ElementType maskType = ElementType::kFloat32;
};

// One tensor of logical dims [batch..., rows, columns] in a buffer of `elements`: its strides and
// where it starts.
struct Placement {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0, elements = 0;
};

Placement dense(const std::vector<int64_t>& dims, int64_t offset = 0) {
  Placement p{dims, std::vector<int64_t>(dims.size()), offset, 0};
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    p.strides[i] = stride;
    stride *= dims[i];
  }
  p.elements = offset + stride;
  return p;
}

// Element i (row-major over the logical dims) of the placement, as an index into its buffer.
int64_t placed(const Placement& p, int64_t i) {
  int64_t at = p.offset;
  for (size_t d = p.dims.size(); d-- > 0;) {
    at += (i % p.dims[d]) * p.strides[d];
    i /= p.dims[d];
  }
  return at;
}

FlashStrides stridesOf(const Placement& p, size_t batchRank) {
  FlashStrides s;
  for (size_t i = 0; i < batchRank; ++i) s.batch[i] = p.strides[i];
  s.row = p.strides[batchRank];
  s.column = p.strides[batchRank + 1];
  return s;
}

std::vector<int64_t> withTail(std::vector<int64_t> dims, int64_t a, int64_t b) {
  dims.push_back(a);
  dims.push_back(b);
  return dims;
}

// Dense placements of the four tensors (K by the case's orientation).
struct Placements {
  Placement q, k, v, out;
};
Placements densePlacements(const FlashCase& c) {
  return {dense(withTail(c.batch, c.lq, c.d)),
          dense(c.kTransposed ? withTail(c.batch, c.d, c.lk) : withTail(c.batch, c.lk, c.d)),
          dense(withTail(c.batch, c.lk, c.dv)), dense(withTail(c.batch, c.lq, c.dv))};
}

template <class T>
std::vector<T> placeValues(const std::vector<float>& logical, const Placement& p) {
  std::vector<T> buffer(size_t(p.elements), T(7.0f));  // the gaps hold a value the kernel must not read in
  for (int64_t i = 0; i < int64_t(logical.size()); ++i) buffer[size_t(placed(p, i))] = T(logical[size_t(i)]);
  return buffer;
}

// Random values rounded to T, as floats.
template <class T>
std::vector<float> randomRounded(int64_t n, double lo, double hi, uint32_t seed) {
  std::vector<float> values;
  for (const T& v : randomValues<T>(n, lo, hi, seed)) values.push_back(float(v));
  return values;
}

struct MaskLayout {
  std::vector<int64_t> strides;  // per dim of [batch..., Lq, Lk], 0 where the mask broadcasts
  int64_t elements = 1;
};
MaskLayout maskLayoutOf(const FlashCase& c) {
  const size_t rank = c.batch.size() + 2;
  std::vector<int64_t> full(rank, 1);
  std::copy(c.mask.begin(), c.mask.end(), full.begin() + std::ptrdiff_t(rank - c.mask.size()));
  MaskLayout m{std::vector<int64_t>(rank, 0), 1};
  for (size_t i = rank; i-- > 0;) {
    m.strides[i] = full[i] == 1 ? 0 : m.elements;
    m.elements *= full[i];
  }
  return m;
}

template <class M>
std::vector<M> maskStorage(const std::vector<float>& values) {
  std::vector<M> stored;
  for (float v : values) stored.push_back(M(v));
  return stored;
}

// Runs the case on the GPU with the tensors where `where` puts them, and compares with the CPU.
// The mask's first row (of every batch-head it reaches; whole batch-heads for a mask without
// rows) is set to `firstRow` where the mask has more than that row.
template <class T>
void checkCase(const FlashCase& c, FlashQueryTile tile, const Placements& where, float firstRow = kHidden,
               int misalignBy = 0, int64_t keySplits = 1) {
  SCOPED_TRACE(
      std::string(toString(elementTypeOf<T>())) + " batch " + dimsText(c.batch) + " Lq " + std::to_string(c.lq) +
      " Lk " + std::to_string(c.lk) + " D " + std::to_string(c.d) + " Dv " + std::to_string(c.dv) +
      (c.kTransposed ? " K transposed" : "") + " mask " + dimsText(c.mask) + " " + toString(c.maskType) +
      (tile == FlashQueryTile::kRows128  ? " 128-row tiles"
       : tile == FlashQueryTile::kRows32 ? " 32-row tiles"
                                         : " 64-row tiles") +
      (misalignBy ? " misaligned" : "") + (keySplits > 1 ? " " + std::to_string(keySplits) + " key splits asked" : ""));
  const size_t batchRank = c.batch.size();
  int64_t heads = 1;
  for (int64_t b : c.batch) heads *= b;
  const uint32_t seed = uint32_t(c.lq * 131 + c.lk * 17 + c.d * 3 + c.dv + heads);
  const std::vector<float> q = randomRounded<T>(heads * c.lq * c.d, -2, 2, seed);
  const std::vector<float> k = randomRounded<T>(heads * c.lk * c.d, -2, 2, seed + 1);
  const std::vector<float> v = randomRounded<T>(heads * c.lk * c.dv, -1, 1, seed + 2);

  kiln::kernels::AttentionProblem ref;
  ref.batch = heads;
  ref.queryLength = c.lq;
  ref.keyLength = c.lk;
  ref.headDim = c.d;
  ref.valueDim = c.dv;
  ref.keyTransposed = c.kTransposed;
  ref.scale = c.d > 0 ? 1.0f / std::sqrt(float(c.d)) : 1.0f;
  FlashAttentionProblem p;
  p.batchRank = int(batchRank);
  for (size_t i = 0; i < batchRank; ++i) p.batchDims[i] = c.batch[i];
  p.queryLength = c.lq;
  p.keyLength = c.lk;
  p.headDim = c.d;
  p.valueDim = c.dv;
  p.keyTransposed = c.kTransposed;
  p.scale = ref.scale;
  p.q = stridesOf(where.q, batchRank);
  p.k = stridesOf(where.k, batchRank);
  p.v = stridesOf(where.v, batchRank);
  p.out = stridesOf(where.out, batchRank);

  std::vector<float> mask;
  std::vector<int64_t> maskOffsets;
  bool rowHidden = false;
  std::unique_ptr<DeviceBuffer> maskBuffer;
  if (!c.mask.empty()) {
    const MaskLayout layout = maskLayoutOf(c);
    // Values in [-3, 0], some keys hidden.
    mask = randomValues<float>(layout.elements, -3, 0, seed + 3);
    for (int64_t i = 5; i < layout.elements; i += 11) mask[size_t(i)] = kHidden;
    const int64_t rowLength = layout.strides[batchRank + 1] ? c.lk : 1;
    if (layout.elements > rowLength) {
      for (int64_t j = 0; j < rowLength; ++j) mask[size_t(j)] = firstRow;
      rowHidden = firstRow == kHidden;
    }
    auto rounded = [&](auto tag) {
      using M = decltype(tag);
      for (float& value : mask) value = float(M(value));
      maskBuffer = std::make_unique<DeviceBuffer>(maskStorage<M>(mask));
    };
    if (c.maskType == ElementType::kFloat16) rounded(Float16{});
    else if (c.maskType == ElementType::kBFloat16) rounded(BFloat16{});
    else maskBuffer = std::make_unique<DeviceBuffer>(mask);
    for (int64_t b = 0; b < heads; ++b) {
      int64_t offset = 0;
      for (int64_t i = int64_t(batchRank) - 1, rest = b; i >= 0; --i) {
        offset += (rest % c.batch[size_t(i)]) * layout.strides[size_t(i)];
        rest /= c.batch[size_t(i)];
      }
      maskOffsets.push_back(offset);
    }
    for (size_t i = 0; i < batchRank; ++i) p.mask.batch[i] = layout.strides[i];
    p.mask.row = layout.strides[batchRank];
    p.mask.column = layout.strides[batchRank + 1];
    ref.mask = mask.data();
    ref.maskOffsets = maskOffsets.data();
    ref.maskRowStride = p.mask.row;
    ref.maskColStride = p.mask.column;
  }
  std::vector<float> want(size_t(heads * c.lq * c.dv), 0.0f);  // no keys: zeros (BLAS takes no empty products)
  if (c.lk > 0) kiln::kernels::attention(ref, q.data(), k.data(), v.data(), want.data());

  // Device tensors; misalignBy shifts each by that many elements (off the 16-byte copies).
  const size_t shift = size_t(misalignBy) * sizeof(T);
  auto upload = [&](const std::vector<float>& logical, const Placement& at) {
    std::vector<T> placedValues = placeValues<T>(logical, at);
    placedValues.insert(placedValues.begin(), size_t(misalignBy), T(0.5f));
    return std::make_unique<DeviceBuffer>(placedValues);
  };
  auto qd = upload(q, where.q), kd = upload(k, where.k), vd = upload(v, where.v);
  DeviceBuffer out(size_t(where.out.elements + misalignBy) * sizeof(T));
  // Where each tensor starts: past the misalignment, at its placement's offset.
  auto start = [&](void* buffer, const Placement& placement) {
    return static_cast<char*>(buffer) + shift + size_t(placement.offset) * sizeof(T);
  };
  // Every output byte written (but those before it, and any gaps between strided rows).
  const size_t outStart = size_t(start(out.data(), where.out) - static_cast<char*>(out.data()));
  const size_t checkedFrom = where.out.elements - where.out.offset > elementCount(where.out.dims) ? out.bytes() : outStart;
  DeviceBuffer workspace(std::max<uint64_t>(16, flashAttentionWorkspaceBytes(p, elementTypeOf<T>(), keySplits)));
  if (keySplits > 1 && c.lk > 64)
    EXPECT_GT(flashAttentionWorkspaceBytes(p, elementTypeOf<T>(), keySplits), 0u) << "no split taken";
  ASSERT_TRUE(runPoisoned(
      out,
      [&] {
        return launchFlashAttention(p, start(qd->data(), where.q), start(kd->data(), where.k),
                                    start(vd->data(), where.v), maskBuffer ? maskBuffer->data() : nullptr, c.maskType,
                                    start(out.data(), where.out), elementTypeOf<T>(),
                                    FlashLaunch{tile, keySplits, workspace.data()}, nullptr);
      },
      checkedFrom));
  const std::vector<T> got = out.read<T>();

  double scale = 0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  const double allowed = (std::is_same_v<T, BFloat16> ? 2e-2 : 5e-3) * std::max(scale, 1e-3);
  double worst = 0;
  int64_t worstAt = -1, exactZeros = 0;
  for (int64_t i = 0; i < int64_t(want.size()); ++i) {
    const double g = double(float(got[size_t(placed(where.out, i) + misalignBy)])), w = want[size_t(i)];
    if (!std::isfinite(g)) {
      ADD_FAILURE() << "output element " << i << " is " << g << ", want " << w;
      return;
    }
    if (w == 0.0) {  // a row hidden entirely: exactly zero, as on the CPU
      ++exactZeros;
      EXPECT_EQ(g, 0.0) << "output element " << i << " of a hidden row";
    }
    if (std::fabs(g - w) > worst) {
      worst = std::fabs(g - w);
      worstAt = i;
    }
  }
  EXPECT_LE(worst, allowed) << "worst at output element " << worstAt << " of " << want.size() << " (scale " << scale
                            << ")";
  if (rowHidden) EXPECT_GT(exactZeros, 0) << "the hidden row gave no zeros";
}

template <class T>
void checkDense(const FlashCase& c, FlashQueryTile tile = FlashQueryTile::kRows64) {
  checkCase<T>(c, tile, densePlacements(c));
}

const std::vector<FlashCase> kCases = {
    {{2, 3}, 7, 9, 64, 64},
    {{1, 1}, 1, 1, 32, 32},
    {{2}, 63, 65, 128, 128, false, {63, 65}},
    {{3, 2}, 64, 64, 64, 64, false, {3, 1, 1, 64}, ElementType::kFloat16},
    {{1, 2}, 65, 197, 64, 64, false, {1, 1, 65, 197}, ElementType::kBFloat16},
    {{2, 3}, 197, 197, 64, 64},
    {{1, 2}, 300, 300, 32, 32, false, {300}},
    {{2, 2}, 33, 40, 64, 64, true},
    {{2, 1}, 17, 197, 128, 128, true, {17, 1}},
    {{2}, 20, 30, 20, 36},
    {{3}, 9, 14, 16, 7, false, {3, 9, 14}, ElementType::kFloat16},
    {{1, 3}, 129, 77, 96, 96},
    {{2, 2, 3}, 11, 70, 48, 80, false, {2, 1, 3, 11, 70}},
    {{}, 12, 20, 64, 64, false, {12, 20}},
    {{1, 2}, 5, 0, 64, 64},
    {{2, 3}, 197, 197, 64, 64, true},  // K transposed, its rows off 16-byte boundaries: staged keys
};

}  // namespace

TEST(CudaFlashAttention, MatchesCpuFloat16) {
  KILN_REQUIRE_GPU();
  for (const FlashCase& c : kCases) checkDense<Float16>(c);
}

TEST(CudaFlashAttention, MatchesCpuBFloat16) {
  KILN_REQUIRE_GPU();
  for (const FlashCase& c : kCases) checkDense<BFloat16>(c);
}

TEST(CudaFlashAttention, MatchesCpuTf32) {
  KILN_REQUIRE_GPU();
  for (const FlashCase& c : kCases) checkDense<float>(c);
}

TEST(CudaFlashAttention, TallQueryTilesMatchCpu) {
  KILN_REQUIRE_GPU();
  for (size_t i : {0u, 2u, 4u, 5u, 8u, 11u, 15u}) {
    checkDense<Float16>(kCases[i], FlashQueryTile::kRows128);
    checkDense<BFloat16>(kCases[i], FlashQueryTile::kRows128);
    checkDense<float>(kCases[i], FlashQueryTile::kRows128);
  }
}

TEST(CudaFlashAttention, ShortQueryTilesMatchCpu) {
  KILN_REQUIRE_GPU();
  for (const FlashCase& c : kCases) {
    checkDense<Float16>(c, FlashQueryTile::kRows32);
    checkDense<BFloat16>(c, FlashQueryTile::kRows32);
    checkDense<float>(c, FlashQueryTile::kRows32);
  }
}

// Key splits: each block takes a share of the key tiles and a second kernel combines them; as many
// splits as tiles, fewer (uneven shares), more asked than there are tiles, with masks hiding whole
// rows (a row hidden in every split is zeros), K transposed, every head-dim padding, both types.
TEST(CudaFlashAttention, KeySplitsMatchCpu) {
  KILN_REQUIRE_GPU();
  for (size_t i : {2u, 4u, 5u, 6u, 8u, 11u, 12u, 14u, 15u}) {
    for (int64_t splits : {2, 3, 16}) {
      checkCase<Float16>(kCases[i], FlashQueryTile::kRows64, densePlacements(kCases[i]), kHidden, 0, splits);
      checkCase<BFloat16>(kCases[i], FlashQueryTile::kRows32, densePlacements(kCases[i]), kHidden, 0, splits);
      checkCase<float>(kCases[i], FlashQueryTile::kRows64, densePlacements(kCases[i]), kHidden, 0, splits);
      checkCase<float>(kCases[i], FlashQueryTile::kRows32, densePlacements(kCases[i]), kHidden, 0, splits);
    }
  }
}

// The split count the launcher would fill a device with: none where the blocks already fill it,
// more where they do not, never more than the key tiles; the workspace only with splits.
TEST(CudaFlashAttention, KeySplitCountsAndWorkspace) {
  FlashAttentionProblem p;
  p.batchRank = 2;
  p.batchDims[0] = 1;
  p.batchDims[1] = 12;
  p.queryLength = p.keyLength = 197;  // ViT-B/16 at batch 1: 4 key tiles of 64
  p.headDim = p.valueDim = 64;
  EXPECT_EQ(flashKeySplits(p, ElementType::kFloat16, FlashQueryTile::kRows64, 132), 4);  // 48 blocks
  EXPECT_EQ(flashKeySplits(p, ElementType::kFloat16, FlashQueryTile::kRows64, 40), 1);   // filled already
  EXPECT_EQ(flashAttentionWorkspaceBytes(p, ElementType::kFloat16, 1), 0u);
  EXPECT_EQ(flashAttentionWorkspaceBytes(p, ElementType::kFloat32, 4), uint64_t(4 * 12 * 197 * 66 * 4));
  EXPECT_EQ(flashAttentionWorkspaceBytes(p, ElementType::kFloat32, 99),
            flashAttentionWorkspaceBytes(p, ElementType::kFloat32, 4));  // cut to the key tiles
  p.keyLength = 200;
  p.headDim = p.valueDim = 128;  // TF32 tiles of 32 keys: 7 of them, cut to 3 + 3 + 1 for 3 asked
  EXPECT_EQ(flashAttentionWorkspaceBytes(p, ElementType::kFloat32, 3), uint64_t(3 * 12 * 197 * 130 * 4));
  EXPECT_EQ(flashAttentionWorkspaceBytes(p, ElementType::kFloat32, 7), uint64_t(7 * 12 * 197 * 130 * 4));
  EXPECT_EQ(flashAttentionWorkspaceBytes(p, ElementType::kFloat32, 6), uint64_t(4 * 12 * 197 * 130 * 4));  // 2 each
}

// Q, K and V as slices of one packed [B, L, 3, H, D] tensor (heads interleaved in each row), the
// output written as [B, L, H, Dv]: only the strides say where the elements are.
TEST(CudaFlashAttention, ReadsAndWritesThroughStrides) {
  KILN_REQUIRE_GPU();
  const int64_t b = 2, l = 50, h = 3, d = 64;
  const FlashCase c{{b, h}, l, l, d, d, false, {b, 1, 1, l}};
  const int64_t packedRow = 3 * h * d;
  Placements where;
  where.q = Placement{withTail(c.batch, l, d), {l * packedRow, d, packedRow, 1}, 0, b * l * packedRow};
  where.k = where.q;
  where.k.offset = h * d;
  where.v = where.q;
  where.v.offset = 2 * h * d;
  where.out = Placement{withTail(c.batch, l, d), {l * h * d, d, h * d, 1}, 0, b * l * h * d};
  for (FlashQueryTile tile : {FlashQueryTile::kRows64, FlashQueryTile::kRows128, FlashQueryTile::kRows32}) {
    checkCase<Float16>(c, tile, where);
    checkCase<BFloat16>(c, tile, where);
    checkCase<float>(c, tile, where);
  }
}

TEST(CudaFlashAttention, MisalignedPointersTakeTheElementPath) {
  KILN_REQUIRE_GPU();
  for (size_t i : {0u, 3u, 7u}) {
    checkCase<Float16>(kCases[i], FlashQueryTile::kRows64, densePlacements(kCases[i]), kHidden, 1);
    checkCase<float>(kCases[i], FlashQueryTile::kRows64, densePlacements(kCases[i]), kHidden, 1);
  }
}

TEST(CudaFlashAttention, LargeFiniteMaskIsNoHiddenRow) {
  KILN_REQUIRE_GPU();
  // A row masked everywhere by float's lowest (exporters' finfo.min) averages V, as on the CPU.
  FlashCase c{{1, 2}, 6, 10, 32, 32, false, {6, 10}};
  checkCase<Float16>(c, FlashQueryTile::kRows64, densePlacements(c), std::numeric_limits<float>::lowest());
  checkCase<float>(c, FlashQueryTile::kRows64, densePlacements(c), std::numeric_limits<float>::lowest());
}

TEST(CudaFlashAttention, RefusesWhatItDoesNotTake) {
  // Host-side checks: no device needed.
  FlashAttentionProblem p;
  p.batchRank = 1;
  p.batchDims[0] = 2;
  p.queryLength = p.keyLength = 8;
  p.headDim = p.valueDim = 64;
  EXPECT_TRUE(flashAttentionTakes(p, ElementType::kFloat16));
  EXPECT_TRUE(flashAttentionTakes(p, ElementType::kBFloat16));
  EXPECT_TRUE(flashAttentionTakes(p, ElementType::kFloat32));  // TF32 products
  EXPECT_FALSE(flashAttentionTakes(p, ElementType::kFloat64));
  FlashAttentionProblem wide = p;
  wide.headDim = kFlashMaxHeadDim + 1;
  EXPECT_FALSE(flashAttentionTakes(wide, ElementType::kFloat16));
  FlashAttentionProblem strided = p;
  strided.v.column = 2;
  EXPECT_FALSE(flashAttentionTakes(strided, ElementType::kFloat16));
  FlashAttentionProblem deep = p;
  deep.batchRank = kFlashMaxBatchDims + 1;
  EXPECT_FALSE(flashAttentionTakes(deep, ElementType::kFloat16));
  EXPECT_EQ(launchFlashAttention(wide, nullptr, nullptr, nullptr, nullptr, ElementType::kFloat32, nullptr,
                                 ElementType::kFloat16, FlashQueryTile::kRows64, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launchFlashAttention(p, nullptr, nullptr, nullptr, nullptr, ElementType::kFloat32, nullptr,
                                 ElementType::kFloat64, FlashQueryTile::kRows64, nullptr),
            cudaErrorInvalidValue);
}
