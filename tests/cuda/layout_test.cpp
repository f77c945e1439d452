// The CUDA layout kernels (strided copies, transpose, reformat, concat / split, pad, generators)
// against the CPU kernels and plain loops. Host-only tests run the kernels' planning and
// per-element index math on host memory (CI, no GPU); GPU tests launch the kernels.
#include "layout_test_support.h"

#include <kernels/cpu/layout/gather_scatter.h>
#include <kernels/cpu/layout/pad.h>
#include <kernels/cpu/layout/rearrange.h>
#include <kernels/cpu/layout/strided_copy.h>
#include <kernels/cuda/layout/concat_split.h>
#include <kernels/cuda/layout/copy_unit.h>
#include <kernels/cuda/layout/generators.h>
#include <kernels/cuda/layout/pad.h>
#include <kernels/cuda/layout/reformat.h>
#include <kernels/cuda/layout/strided_copy.h>

#include <functional>
#include <memory>
#include <numeric>
#include <tuple>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

using Coords = std::vector<int64_t>;

// out[outCoords] = in[source(outCoords)], by plain loops: the reference no kernel shares.
Bytes naiveGather(const Bytes& in, const Coords& inDims, const Coords& outDims, size_t es,
                  const std::function<Coords(const Coords&)>& source) {
  const int64_t count = countOf(outDims);
  Bytes out(size_t(count) * es);
  const Coords inStrides = contiguousStrides(inDims);
  Coords c(outDims.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;
    for (size_t d = outDims.size(); d-- > 0;) c[d] = rest % outDims[d], rest /= outDims[d];
    const Coords s = source(c);
    int64_t offset = 0;
    for (size_t d = 0; d < s.size(); ++d) offset += s[d] * inStrides[d];
    std::memcpy(&out[size_t(i) * es], &in[size_t(offset) * es], es);
  }
  return out;
}

// What the CPU kernel gives for a view (copyStrided with the view's dims and strides).
Bytes cpuCopy(const Bytes& in, const StridedView& view, size_t es) {
  Bytes out(size_t(countOf(view.dims)) * es);
  if (out.empty()) return out;
  withStorage(es, [&](auto tag) {
    using T = decltype(tag);
    cpu::copyStrided(reinterpret_cast<const T*>(in.data()) + view.offset, reinterpret_cast<T*>(out.data()), view.dims,
                     view.strides);
  });
  return out;
}

void emulateTiles(const TransposeTiles& t, const uint8_t* src, uint8_t* dst, size_t es) {
  for (int64_t b = 0; b < t.batches; ++b) {
    const int64_t sb = t.srcBatch.offsetOf(b), db = t.dstBatch.offsetOf(b);
    for (int64_t i = 0; i < t.rows; ++i)
      for (int64_t j = 0; j < t.cols; ++j) {
        uint8_t* to = dst + size_t(t.dstOffset(db, i, j)) * es;
        if (t.inSource(i, j))
          std::memcpy(to, src + t.srcOffset(sb, i, j) * int64_t(es), es);
        else
          std::memset(to, 0, es);
      }
  }
}

// Runs the plan the GPU would run, on host memory; a view too big to plan must be a Tile with a
// modulo form (`tileOf`: its input dims and repeats).
Bytes emulateCopy(const uint8_t* src, const StridedView& view, size_t es,
                  const std::optional<std::pair<Coords, Coords>>& tileOf) {
  Bytes out(size_t(countOf(view.dims)) * es);
  const uint8_t* from = src + view.offset * int64_t(es);
  StridedCopyPlan plan;
  if (!planStridedCopy(view.dims, view.strides, int(es), addressOf(from), addressOf(out.data()), plan)) {
    EXPECT_TRUE(tileOf.has_value()) << "only Tile falls back when a view does not fit";
    const auto modulo = tileOf ? tileModulo(tileOf->first, tileOf->second) : std::nullopt;
    for (int64_t i = 0; modulo && i < countOf(view.dims); ++i)
      std::memcpy(&out[size_t(i) * es], from + modulo->sourceOffset(i) * int64_t(es), es);
    return out;
  }
  if (plan.kind == StridedCopyPlan::Kind::kUnits) {
    const int64_t u = plan.unitBytes;
    for (int64_t i = 0; i < plan.count; ++i)
      std::memcpy(&out[size_t(i * u)], from + plan.source.offsetOf(i) * u, size_t(u));
  } else if (plan.kind == StridedCopyPlan::Kind::kTiles) {
    emulateTiles(plan.tiles, from, out.data(), es);
  }
  return out;
}

struct ViewCase {
  std::string name;
  Coords inDims, outDims;
  std::function<std::optional<StridedView>()> view;
  std::function<Coords(const Coords&)> source;  // reference: input coordinates of an output element
  std::function<cudaError_t(const void*, void*, ElementType)> launch;
  std::optional<std::pair<Coords, Coords>> tileOf = std::nullopt;  // Tile's input dims and repeats
};

std::vector<ViewCase> viewCases() {
  std::vector<ViewCase> cases;
  auto addTranspose = [&](Coords dims, Coords perm) {
    Coords out;
    for (int64_t p : perm) out.push_back(dims[size_t(p)]);
    cases.push_back({"transpose " + dimsText(dims) + " perm " + dimsText(perm), dims, out,
                     [=] { return transposeView(dims, perm); },
                     [=](const Coords& o) {
                       Coords in(o.size());
                       for (size_t d = 0; d < o.size(); ++d) in[size_t(perm[d])] = o[d];
                       return in;
                     },
                     [=](const void* s, void* d, ElementType t) { return transpose(s, d, dims, perm, t, nullptr); }});
  };
  addTranspose({7}, {0});
  addTranspose({33, 17}, {1, 0});
  addTranspose({1001, 3}, {1, 0});
  addTranspose({3, 1001}, {1, 0});
  for (Coords perm : {Coords{0, 2, 1}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}}) addTranspose({2, 33, 40}, perm);
  addTranspose({2, 3, 16, 9}, {0, 2, 3, 1});  // NCHW -> NHWC
  addTranspose({2, 16, 9, 3}, {0, 3, 1, 2});  // NHWC -> NCHW
  addTranspose({1, 8, 1, 8}, {3, 2, 1, 0});
  addTranspose({2, 3, 4, 5, 6}, {4, 2, 0, 3, 1});
  addTranspose({2, 9, 1, 5, 12}, {0, 4, 2, 1, 3});
  addTranspose({0, 5}, {1, 0});

  auto addSlice = [&](Coords dims, Coords starts, Coords steps, Coords out) {
    cases.push_back(
        {"slice " + dimsText(dims) + " from " + dimsText(starts) + " step " + dimsText(steps), dims, out,
         [=] { return sliceView(dims, starts, steps, out); },
         [=](const Coords& o) {
           Coords in(o.size());
           for (size_t d = 0; d < o.size(); ++d) in[d] = starts[d] + o[d] * steps[d];
           return in;
         },
         [=](const void* s, void* d, ElementType t) { return slice(s, d, dims, starts, steps, out, t, nullptr); }});
  };
  addSlice({1001}, {1000}, {-1}, {1001});
  addSlice({1001}, {1}, {1}, {999});
  addSlice({10, 33}, {1, 32}, {2, -3}, {5, 11});
  addSlice({4, 7, 9}, {3, 0, 8}, {-1, 2, -2}, {4, 4, 5});
  addSlice({2, 3, 4, 5, 33}, {1, 0, 1, 0, 1}, {1, 2, 1, 1, 1}, {1, 2, 3, 5, 32});
  addSlice({5, 6}, {0, 0}, {1, 1}, {0, 6});

  auto addExpand = [&](Coords in, Coords out) {
    cases.push_back({"expand " + dimsText(in) + " to " + dimsText(out), in, out, [=] { return expandView(in, out); },
                     [=](const Coords& o) {
                       Coords c(in.size());
                       const size_t lead = out.size() - in.size();
                       for (size_t d = 0; d < in.size(); ++d) c[d] = in[d] == 1 ? 0 : o[lead + d];
                       return c;
                     },
                     [=](const void* s, void* d, ElementType t) { return expand(s, d, in, out, t, nullptr); }});
  };
  addExpand({3, 1, 5}, {2, 3, 4, 5});
  addExpand({1}, {7, 33});
  addExpand({}, {4});
  addExpand({33, 1}, {33, 8});
  addExpand({1, 9, 1}, {1, 9, 1});

  auto addTile = [&](Coords in, Coords repeats) {
    Coords out;
    for (size_t d = 0; d < in.size(); ++d) out.push_back(in[d] * repeats[d]);
    cases.push_back({"tile " + dimsText(in) + " by " + dimsText(repeats), in, out,
                     [=] { return tileView(in, repeats); },
                     [=](const Coords& o) {
                       Coords c(o.size());
                       for (size_t d = 0; d < o.size(); ++d) c[d] = o[d] % in[d];
                       return c;
                     },
                     [=](const void* s, void* d, ElementType t) { return tile(s, d, in, repeats, t, nullptr); },
                     std::pair{in, repeats}});
  };
  addTile({3, 5}, {2, 3});
  addTile({1, 7}, {4, 1});
  addTile({33}, {3});
  addTile({2, 3, 2, 3, 2}, {2, 2, 2, 2, 2});  // ten view axes: the modulo fallback
  addTile({2, 3}, {0, 2});

  auto addDepthToSpace = [&](Coords in, int64_t b, DepthToSpaceMode mode) {
    const int64_t c = in[1] / (b * b);
    cases.push_back(
        {"depth_to_space " + dimsText(in) + (mode == DepthToSpaceMode::kDCR ? " DCR" : " CRD"),
         in,
         {in[0], c, in[2] * b, in[3] * b},
         [=] { return depthToSpaceView(in, b, mode); },
         [=](const Coords& o) {
           const int64_t bh = o[2] % b, bw = o[3] % b;
           const int64_t channel =
               mode == DepthToSpaceMode::kDCR ? (bh * b + bw) * c + o[1] : o[1] * b * b + bh * b + bw;
           return Coords{o[0], channel, o[2] / b, o[3] / b};
         },
         [=](const void* s, void* d, ElementType t) { return depthToSpace(s, d, in, b, mode, t, nullptr); }});
  };
  addDepthToSpace({2, 8, 3, 5}, 2, DepthToSpaceMode::kDCR);
  addDepthToSpace({2, 8, 3, 5}, 2, DepthToSpaceMode::kCRD);
  addDepthToSpace({1, 27, 4, 7}, 3, DepthToSpaceMode::kCRD);
  addDepthToSpace({1, 64, 9, 9}, 4, DepthToSpaceMode::kDCR);

  auto addSpaceToDepth = [&](Coords in, int64_t b) {
    const int64_t c = in[1];
    cases.push_back({"space_to_depth " + dimsText(in),
                     in,
                     {in[0], c * b * b, in[2] / b, in[3] / b},
                     [=] { return spaceToDepthView(in, b); },
                     [=](const Coords& o) {
                       const int64_t block = o[1] / c, bh = block / b, bw = block % b;
                       return Coords{o[0], o[1] % c, o[2] * b + bh, o[3] * b + bw};
                     },
                     [=](const void* s, void* d, ElementType t) { return spaceToDepth(s, d, in, b, t, nullptr); }});
  };
  addSpaceToDepth({2, 3, 6, 4}, 2);
  addSpaceToDepth({1, 16, 33, 66}, 3);
  return cases;
}

}  // namespace

TEST(CudaLayoutHost, CopyUnitIsTheWidestThatDividesEverything) {
  EXPECT_EQ(copyUnitBytes(2, {64, 0, 256}), 16);
  EXPECT_EQ(copyUnitBytes(2, {6, 0}), 2);
  EXPECT_EQ(copyUnitBytes(4, {24, -8}), 8);
  EXPECT_EQ(copyUnitBytes(1, {3}), 1);
  EXPECT_EQ(copyUnitBytes(8, {8}), 8);
}

// Every view's CPU copy equals the plain loops, and the GPU's plan (run on the host) equals both,
// for every element size and for a source that is not 16-byte aligned.
TEST(CudaLayoutHost, StridedViewsAndPlansMatchTheReference) {
  for (const ViewCase& c : viewCases())
    for (size_t es : {1, 2, 4, 8})
      for (int64_t shift : {0, 1}) {
        SCOPED_TRACE(c.name + ", " + std::to_string(es) + "-byte elements, shift " + std::to_string(shift));
        const auto view = c.view();
        ASSERT_TRUE(view.has_value());
        ASSERT_EQ(countOf(view->dims), countOf(c.outDims));  // tile views split each axis in two
        const int64_t inCount = countOf(c.inDims);
        Bytes storage = randomElements(ElementType::kUInt8, (inCount + shift) * int64_t(es), uint32_t(inCount + es));
        const Bytes in(storage.begin() + shift * int64_t(es), storage.end());
        const Bytes expected = naiveGather(in, c.inDims, c.outDims, es, c.source);
        EXPECT_TRUE(sameElements(cpuCopy(in, *view, es), expected, es));
        EXPECT_TRUE(sameElements(emulateCopy(storage.data() + shift * int64_t(es), *view, es, c.tileOf), expected, es));
      }
}

TEST(CudaLayoutHost, PlansPickVectorUnitsAndTiles) {
  StridedCopyPlan plan;
  // A contiguous fp16 copy of 64 elements moves as 16-byte units.
  ASSERT_TRUE(planStridedCopy({4, 64}, {64, 1}, 2, 0, 0, plan));
  EXPECT_EQ(plan.kind, StridedCopyPlan::Kind::kUnits);
  EXPECT_EQ(plan.unitBytes, 16);
  EXPECT_EQ(plan.count, 4 * 64 * 2 / 16);
  // NCHW -> NHWC of 16 x 81 goes through tiles.
  const auto nhwc = transposeView({2, 16, 9, 9}, {0, 2, 3, 1});
  ASSERT_TRUE(planStridedCopy(nhwc->dims, nhwc->strides, 4, 0, 0, plan));
  EXPECT_EQ(plan.kind, StridedCopyPlan::Kind::kTiles);
  EXPECT_EQ(plan.tiles.rows, 81);
  EXPECT_EQ(plan.tiles.cols, 16);
  EXPECT_EQ(plan.tiles.batches, 2);
  // Broadcasts stay element copies; empty copies do nothing.
  ASSERT_TRUE(planStridedCopy({5, 7}, {0, 1}, 4, 4, 0, plan));
  EXPECT_EQ(plan.kind, StridedCopyPlan::Kind::kUnits);
  EXPECT_EQ(plan.unitBytes, 4);
  ASSERT_TRUE(planStridedCopy({5, 0}, {0, 1}, 4, 0, 0, plan));
  EXPECT_EQ(plan.kind, StridedCopyPlan::Kind::kNothing);
  // Nine axes that do not merge are refused.
  EXPECT_FALSE(planStridedCopy(Coords(9, 2), {0, 1, 0, 1, 0, 1, 0, 1, 0}, 4, 0, 0, plan));
}

TEST(CudaLayoutHost, ViewsRefuseBadArguments) {
  EXPECT_FALSE(transposeView({2, 3}, {0, 0}).has_value());
  EXPECT_FALSE(transposeView({2, 3}, {0}).has_value());
  EXPECT_FALSE(sliceView({5}, {4}, {1}, {2}).has_value());  // reads past the end
  EXPECT_FALSE(sliceView({5}, {0}, {0}, {1}).has_value());
  EXPECT_FALSE(expandView({2, 3}, {4, 3}).has_value());
  EXPECT_FALSE(tileView({2}, {-1}).has_value());
  EXPECT_FALSE(depthToSpaceView({1, 6, 2, 2}, 2, DepthToSpaceMode::kDCR).has_value());
  EXPECT_FALSE(spaceToDepthView({1, 1, 3, 4}, 2).has_value());
}

namespace {

// NCHW -> NHWC (padded to `padded` channels with zeros) by plain loops.
Bytes naiveNhwc(const Bytes& in, int64_t n, int64_t c, int64_t hw, int64_t padded, size_t es) {
  Bytes out(size_t(n * hw * padded) * es, 0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        std::memcpy(&out[size_t((b * hw + p) * padded + ch) * es], &in[size_t((b * c + ch) * hw + p) * es], es);
  return out;
}

Bytes naiveNchw(const Bytes& in, int64_t n, int64_t c, int64_t hw, int64_t padded, size_t es) {
  Bytes out(size_t(n * c * hw) * es);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        std::memcpy(&out[size_t((b * c + ch) * hw + p) * es], &in[size_t((b * hw + p) * padded + ch) * es], es);
  return out;
}

struct ReformatCase {
  int64_t n, c, h, w, padded;
};
// Padded channels of 16 bytes (8 fp16, 4 fp32) take the pixel-a-thread path: an RGB stem's input.
const std::vector<ReformatCase> kReformatCases{{1, 3, 7, 9, 8},   {2, 16, 5, 5, 16}, {1, 33, 1, 1, 40},
                                               {3, 8, 32, 33, 8}, {1, 1, 1, 1, 8},   {2, 5, 17, 3, 5},
                                               {0, 4, 2, 2, 8},   {1, 70, 3, 11, 72}, {2, 3, 9, 7, 4},
                                               {5, 3, 57, 55, 8}};

}  // namespace

TEST(CudaLayoutHost, ReformatTilesMatchPlainLoops) {
  for (const ReformatCase& r : kReformatCases)
    for (size_t es : {1, 2, 4, 8}) {
      SCOPED_TRACE("n " + std::to_string(r.n) + " c " + std::to_string(r.c) + " padded " + std::to_string(r.padded));
      const int64_t hw = r.h * r.w;
      const Bytes nchw = randomElements(ElementType::kUInt8, r.n * r.c * hw * int64_t(es), 5);
      Bytes nhwc(size_t(r.n * hw * r.padded) * es, 0xFF);
      emulateTiles(nchwToNhwcTiles(r.n, r.c, hw, r.padded), nchw.data(), nhwc.data(), es);
      const Bytes expected = naiveNhwc(nchw, r.n, r.c, hw, r.padded, es);
      EXPECT_TRUE(sameElements(nhwc, expected, es));
      Bytes back(nchw.size(), 0xFF);
      emulateTiles(nhwcToNchwTiles(r.n, r.c, hw, r.padded), nhwc.data(), back.data(), es);
      EXPECT_TRUE(sameElements(back, nchw, es));
    }
  EXPECT_EQ(paddedChannelCount(3), 8);
  EXPECT_EQ(paddedChannelCount(16), 16);
  EXPECT_EQ(paddedChannelCount(17), 24);
}

namespace {

struct ConcatCase {
  int64_t outer, inner;
  Coords sizes;
};
std::vector<ConcatCase> concatCases() {
  Coords many(100);
  for (size_t i = 0; i < many.size(); ++i) many[i] = int64_t(i % 3);  // 100 parts: two launches
  return {{1, 1, {1, 7, 33}}, {3, 5, {2, 0, 4}}, {7, 8, {8, 8}}, {2, 33, {1, 1001}}, {1, 1, {1001}}, {4, 3, many}};
}

// Concat's joined tensor from its parts by the plan the GPU runs (parts given as host memory).
void emulateBlockCopies(const std::vector<BlockCopyLaunch>& launches, uint8_t* joined, bool split) {
  for (const BlockCopyLaunch& l : launches)
    for (int p = 0; p < l.count; ++p) {
      const BlockPart& part = l.parts[p];
      uint8_t* data = reinterpret_cast<uint8_t*>(part.partAddress);
      const int64_t u = part.unitBytes;
      for (int64_t idx = 0; idx < l.outer * part.blockUnits; ++idx) {
        const int64_t o = idx / part.blockUnits, k = idx % part.blockUnits;
        uint8_t* whole = joined + (o * part.rowUnits + part.startUnits + k) * u;
        if (split)
          std::memcpy(data + idx * u, whole, size_t(u));
        else
          std::memcpy(whole, data + idx * u, size_t(u));
      }
    }
}

}  // namespace

TEST(CudaLayoutHost, ConcatAndSplitPlansMatchTheCpuKernels) {
  for (const ConcatCase& c : concatCases())
    for (size_t es : {1, 2, 4, 8}) {
      SCOPED_TRACE("outer " + std::to_string(c.outer) + " inner " + std::to_string(c.inner) + " parts " +
                   std::to_string(c.sizes.size()) + ", " + std::to_string(es) + "-byte elements");
      std::vector<Bytes> parts;
      std::vector<int64_t> addresses;
      int64_t total = 0;
      for (size_t p = 0; p < c.sizes.size(); ++p) {
        parts.push_back(randomElements(ElementType::kUInt8, c.outer * c.sizes[p] * c.inner * int64_t(es), uint32_t(p)));
        addresses.push_back(addressOf(parts.back().data()));
        total += c.sizes[p];
      }
      Bytes expected(size_t(c.outer * total * c.inner) * es), joined(expected.size(), 0xFF);
      withStorage(es, [&](auto tag) {
        using T = decltype(tag);
        std::vector<const T*> from;
        for (const Bytes& p : parts) from.push_back(reinterpret_cast<const T*>(p.data()));
        cpu::concatBlocks(from, c.sizes, reinterpret_cast<T*>(expected.data()), c.outer, c.inner);
      });
      std::vector<BlockCopyLaunch> launches;
      ASSERT_TRUE(planBlockCopies(addresses, c.sizes, addressOf(joined.data()), c.outer, c.inner, int(es), launches));
      emulateBlockCopies(launches, joined.data(), false);
      EXPECT_TRUE(sameElements(joined, expected, es));
      // Split back into cleared parts: every part comes back.
      std::vector<Bytes> original = parts;
      for (Bytes& p : parts) std::fill(p.begin(), p.end(), 0xFF);
      ASSERT_TRUE(planBlockCopies(addresses, c.sizes, addressOf(joined.data()), c.outer, c.inner, int(es), launches));
      emulateBlockCopies(launches, joined.data(), true);
      for (size_t p = 0; p < parts.size(); ++p) EXPECT_TRUE(sameElements(parts[p], original[p], es)) << "part " << p;
    }
}

namespace {

struct PadCase {
  Coords src, begin, end;
};
const std::vector<PadCase> kPadCases{
    {{7}, {2}, {3}},
    {{1001}, {-3}, {5}},
    {{1}, {4}, {4}},
    {{5, 6}, {1, 2}, {3, 0}},
    {{5, 6}, {-1, 7}, {2, -2}},
    {{2, 3, 4}, {0, 0, 1}, {0, 0, 1}},
    {{2, 3, 9, 9}, {0, 0, 3, 3}, {0, 0, 3, 3}},
    {{2, 3, 4, 5, 3}, {1, 0, 2, 0, 1}, {0, 1, 0, 3, 2}},
    {{3, 4}, {0, 0}, {0, 0}},
    {{4, 3}, {-4, 0}, {0, 0}},  // crops an axis to nothing
};

Coords padOut(const PadCase& c) {
  Coords out;
  for (size_t d = 0; d < c.src.size(); ++d) out.push_back(c.src[d] + c.begin[d] + c.end[d]);
  return out;
}

cpu::PadMode cpuMode(PadMode mode) {
  switch (mode) {
    case PadMode::kConstant: return cpu::PadMode::kConstant;
    case PadMode::kReflect: return cpu::PadMode::kReflect;
    case PadMode::kEdge: return cpu::PadMode::kEdge;
    case PadMode::kWrap: return cpu::PadMode::kWrap;
  }
  return cpu::PadMode::kConstant;
}

Bytes cpuPad(const Bytes& in, const PadCase& c, PadMode mode, const Bytes& constant, size_t es) {
  const Coords out = padOut(c);
  Bytes expected(size_t(countOf(out)) * es);
  withStorage(es, [&](auto tag) {
    using T = decltype(tag);
    T value;
    std::memcpy(&value, constant.data(), sizeof value);
    cpu::pad(reinterpret_cast<const T*>(in.data()), c.src, reinterpret_cast<T*>(expected.data()), c.begin, out,
             cpuMode(mode), value);
  });
  return expected;
}

constexpr PadMode kPadModes[] = {PadMode::kConstant, PadMode::kReflect, PadMode::kEdge, PadMode::kWrap};

}  // namespace

TEST(CudaLayoutHost, PadGeometryMatchesTheCpuKernel) {
  for (const PadCase& c : kPadCases)
    for (PadMode mode : kPadModes)
      for (size_t es : {1, 8}) {
        SCOPED_TRACE("pad " + dimsText(c.src) + " begin " + dimsText(c.begin) + " end " + dimsText(c.end) + " mode " +
                     std::to_string(int(mode)));
        const Bytes in = randomElements(ElementType::kUInt8, countOf(c.src) * int64_t(es), 3);
        const Bytes constant(es, 0x5A);
        const Coords out = padOut(c);
        const auto g = padGeometry(c.src, c.begin, out, mode);
        ASSERT_TRUE(g.has_value());
        Bytes actual(size_t(countOf(out)) * es);
        for (int64_t i = 0; i < countOf(out); ++i) {
          const int64_t from = g->sourceOffset(i);
          std::memcpy(&actual[size_t(i) * es], from < 0 ? constant.data() : &in[size_t(from) * es], es);
        }
        EXPECT_TRUE(sameElements(actual, cpuPad(in, c, mode, constant, es), es));
      }
  EXPECT_FALSE(padGeometry({0, 3}, {1, 0}, {2, 3}, PadMode::kReflect).has_value());
  EXPECT_TRUE(padGeometry({0, 3}, {1, 0}, {2, 3}, PadMode::kConstant).has_value());
}

// ----------------------------------------------------------------------------------------------
// GPU tests

TEST(CudaLayout, StridedOpsMatchTheReference) {
  KILN_REQUIRE_GPU();
  for (const ViewCase& c : viewCases())
    for (ElementType type : movementTypes()) {
      SCOPED_TRACE(c.name + " " + toString(type));
      const size_t es = elementBytes(type);
      const Bytes in = randomElements(type, countOf(c.inDims), 11);
      DeviceBuffer src(in), dst(byteSize(type, countOf(c.outDims)));
      KILN_CUDA_OK(c.launch(src.get(), dst.get(), type));
      EXPECT_TRUE(sameElements(dst.download(), naiveGather(in, c.inDims, c.outDims, es, c.source), es));
    }
}

TEST(CudaLayout, CopyStridedTakesBroadcastAndReversedStrides) {
  KILN_REQUIRE_GPU();
  // [3, 4, 5] from a [5, 3] source: axis 0 reversed (stride -1 from the last row), axis 1 broadcast.
  const Coords dims{3, 4, 5}, strides{-1, 0, 3};
  for (ElementType type : movementTypes()) {
    SCOPED_TRACE(toString(type));
    const size_t es = elementBytes(type);
    const Bytes in = randomElements(type, 15, 2);
    DeviceBuffer src(in), dst(byteSize(type, 60));
    const void* start = src.as<uint8_t>() + 2 * es;
    KILN_CUDA_OK(copyStrided(start, dst.get(), dims, strides, type, nullptr));
    const Bytes expected = naiveGather(in, {5, 3}, dims, es, [](const Coords& o) { return Coords{o[2], 2 - o[0]}; });
    EXPECT_TRUE(sameElements(dst.download(), expected, es));
  }
  DeviceBuffer any(16);
  EXPECT_EQ(transpose(any.get(), any.get(), {2, 2}, {1, 1}, ElementType::kFloat32, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(copyStrided(any.get(), any.get(), {0, 4}, {4, 1}, ElementType::kFloat32, nullptr), cudaSuccess);
}

TEST(CudaLayout, ReformatMatchesPlainLoops) {
  KILN_REQUIRE_GPU();
  for (const ReformatCase& r : kReformatCases)
    for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kInt64, ElementType::kUInt8}) {
      SCOPED_TRACE("n " + std::to_string(r.n) + " c " + std::to_string(r.c) + " h " + std::to_string(r.h) + " w " +
                   std::to_string(r.w) + " padded " + std::to_string(r.padded) + " " + toString(type));
      const size_t es = elementBytes(type);
      const int64_t hw = r.h * r.w;
      const Bytes nchw = randomElements(type, r.n * r.c * hw, 9);
      DeviceBuffer src(nchw), nhwc(byteSize(type, r.n * hw * r.padded)), back(nchw.size());
      KILN_CUDA_OK(nchwToNhwc(src.get(), nhwc.get(), r.n, r.c, r.h, r.w, type, nullptr, r.padded));
      EXPECT_TRUE(sameElements(nhwc.download(), naiveNhwc(nchw, r.n, r.c, hw, r.padded, es), es));
      KILN_CUDA_OK(nhwcToNchw(nhwc.get(), back.get(), r.n, r.c, r.h, r.w, type, nullptr, r.padded));
      EXPECT_TRUE(sameElements(back.download(),
                               naiveNchw(naiveNhwc(nchw, r.n, r.c, hw, r.padded, es), r.n, r.c, hw, r.padded, es), es));
    }
  DeviceBuffer any(16);
  EXPECT_EQ(nchwToNhwc(any.get(), any.get(), 1, 9, 1, 1, ElementType::kFloat16, nullptr, 8), cudaErrorInvalidValue);
}

TEST(CudaLayout, ConcatAndSplitMatchTheCpuKernels) {
  KILN_REQUIRE_GPU();
  for (const ConcatCase& c : concatCases())
    for (ElementType type : movementTypes()) {
      SCOPED_TRACE("outer " + std::to_string(c.outer) + " inner " + std::to_string(c.inner) + " parts " +
                   std::to_string(c.sizes.size()) + " " + toString(type));
      const size_t es = elementBytes(type);
      std::vector<Bytes> parts;
      std::vector<std::unique_ptr<DeviceBuffer>> deviceParts;
      std::vector<const void*> pointers;
      int64_t total = 0;
      for (size_t p = 0; p < c.sizes.size(); ++p) {
        parts.push_back(randomElements(type, c.outer * c.sizes[p] * c.inner, uint32_t(p + 1)));
        deviceParts.push_back(std::make_unique<DeviceBuffer>(parts.back()));
        pointers.push_back(deviceParts.back()->get());
        total += c.sizes[p];
      }
      Bytes expected(byteSize(type, c.outer * total * c.inner));
      withStorage(es, [&](auto tag) {
        using T = decltype(tag);
        std::vector<const T*> from;
        for (const Bytes& p : parts) from.push_back(reinterpret_cast<const T*>(p.data()));
        cpu::concatBlocks(from, c.sizes, reinterpret_cast<T*>(expected.data()), c.outer, c.inner);
      });
      DeviceBuffer joined(expected.size());
      KILN_CUDA_OK(concat(pointers, c.sizes, joined.get(), c.outer, c.inner, type, nullptr));
      EXPECT_TRUE(sameElements(joined.download(), expected, es));

      // Split into fresh (poisoned) outputs, the second one unused.
      std::vector<std::unique_ptr<DeviceBuffer>> outs;
      std::vector<void*> outPointers;
      for (size_t p = 0; p < c.sizes.size(); ++p) {
        outs.push_back(std::make_unique<DeviceBuffer>(parts[p].size()));
        outPointers.push_back(p == 1 ? nullptr : outs.back()->get());
      }
      KILN_CUDA_OK(split(joined.get(), outPointers, c.sizes, c.outer, c.inner, type, nullptr));
      for (size_t p = 0; p < c.sizes.size(); ++p) {
        const Bytes got = outs[p]->download();
        if (p == 1)
          EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t b) { return b == 0xFF; }));
        else
          EXPECT_TRUE(sameElements(got, parts[p], es)) << "part " << p;
      }
    }
}

TEST(CudaLayout, PadMatchesTheCpuKernel) {
  KILN_REQUIRE_GPU();
  for (const PadCase& c : kPadCases)
    for (PadMode mode : kPadModes)
      for (ElementType type : movementTypes()) {
        SCOPED_TRACE("pad " + dimsText(c.src) + " begin " + dimsText(c.begin) + " end " + dimsText(c.end) + " mode " +
                     std::to_string(int(mode)) + " " + toString(type));
        const size_t es = elementBytes(type);
        const Bytes in = randomElements(type, countOf(c.src), 4);
        const Bytes constant = randomElements(type, 1, 77);
        DeviceBuffer src(in), value(constant), dst(byteSize(type, countOf(padOut(c))));
        KILN_CUDA_OK(pad(src.get(), c.src, dst.get(), c.begin, padOut(c), mode, value.get(), type, nullptr));
        EXPECT_TRUE(sameElements(dst.download(), cpuPad(in, c, mode, constant, es), es));
        if (mode == PadMode::kConstant) {  // no constant given: zero
          dst.poison();
          KILN_CUDA_OK(pad(src.get(), c.src, dst.get(), c.begin, padOut(c), mode, nullptr, type, nullptr));
          EXPECT_TRUE(sameElements(dst.download(), cpuPad(in, c, mode, Bytes(es, 0), es), es));
        }
      }
}

TEST(CudaLayout, RangeMatchesTheCpuLoop) {
  KILN_REQUIRE_GPU();
  for (int64_t count : {1, 7, 1001}) {
    for (ElementType type :
         {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16, ElementType::kFloat64}) {
      SCOPED_TRACE(std::to_string(count) + " " + toString(type));
      const double start = -3.25, delta = 0.1;
      std::vector<double> values;
      for (int64_t i = 0; i < count; ++i) {
        const double v = start + double(i) * delta;
        values.push_back(type == ElementType::kFloat64 ? v : double(float(v)));
      }
      DeviceBuffer dst(byteSize(type, count));
      KILN_CUDA_OK(rangeFloat(dst.get(), count, start, delta, type, nullptr));
      EXPECT_TRUE(sameElements(dst.download(), fromValues(values, type), elementBytes(type)));
    }
    for (ElementType type : {ElementType::kInt64, ElementType::kInt32, ElementType::kUInt8, ElementType::kInt16}) {
      SCOPED_TRACE(std::to_string(count) + " " + toString(type));
      Bytes expected(byteSize(type, count));
      for (int64_t i = 0; i < count; ++i) storeBits(expected, type, i, uint64_t(int64_t(5) - 3 * i));
      DeviceBuffer dst(expected.size());
      KILN_CUDA_OK(rangeInteger(dst.get(), count, 5, -3, type, nullptr));
      EXPECT_TRUE(sameElements(dst.download(), expected, elementBytes(type)));
    }
  }
  EXPECT_EQ(rangeCount(0, 10, 3), 4);
  EXPECT_EQ(rangeCount(10, 0, 3), 0);
  EXPECT_EQ(rangeCount(1, -1.5, -0.5), 5);
  DeviceBuffer any(16);
  EXPECT_EQ(rangeFloat(any.get(), 2, 0, 1, ElementType::kInt32, nullptr), cudaErrorInvalidValue);
}

TEST(CudaLayout, EyeLikeAndTriluMatchTheCpu) {
  KILN_REQUIRE_GPU();
  const ElementType eyeTypes[] = {ElementType::kFloat32, ElementType::kFloat16, ElementType::kInt64,
                                  ElementType::kBool,    ElementType::kUInt8,   ElementType::kFloat8E4M3,
                                  ElementType::kBFloat16};
  for (auto [rows, cols, k] : {std::tuple{1, 1, 0}, {7, 33, 2}, {33, 7, -3}, {5, 5, 9}, {8, 1001, 0}})
    for (ElementType type : eyeTypes) {
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " k " + std::to_string(k) + " " +
                   toString(type));
      std::vector<double> expected(size_t(rows * cols), 0.0);
      for (int64_t i = std::max(0, -k); i < rows && i + k < cols; ++i) expected[size_t(i * cols + i + k)] = 1;
      DeviceBuffer dst(byteSize(type, rows * cols));
      KILN_CUDA_OK(eyeLike(dst.get(), rows, cols, k, type, nullptr));
      EXPECT_TRUE(sameElements(dst.download(), fromValues(expected, type), elementBytes(type)));
    }
  for (auto [batches, rows, cols] : {std::tuple{1, 1, 1}, {3, 7, 33}, {2, 33, 7}, {1, 1001, 8}, {0, 4, 4}})
    for (int64_t k : {0, 2, -3, 100, -100})
      for (bool upper : {true, false})
        for (ElementType type : movementTypes()) {
          SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " k " + std::to_string(k) +
                       (upper ? " upper " : " lower ") + toString(type));
          const size_t es = elementBytes(type);
          const int64_t count = int64_t(batches) * rows * cols;
          const Bytes in = randomElements(type, count, 6);
          Bytes expected(in.size());
          withStorage(es, [&](auto tag) {
            using T = decltype(tag);
            if (count > 0)
              cpu::triangle(reinterpret_cast<const T*>(in.data()), reinterpret_cast<T*>(expected.data()), batches, rows,
                            cols, k, upper);
          });
          DeviceBuffer src(in), dst(in.size());
          KILN_CUDA_OK(trilu(src.get(), dst.get(), batches, rows, cols, k, upper, type, nullptr));
          EXPECT_TRUE(sameElements(dst.download(), expected, es));
        }
}

TEST(CudaLayout, OneHotMatchesTheCpuKernel) {
  KILN_REQUIRE_GPU();
  for (auto [outer, depth, inner] : {std::tuple{1, 1, 1}, {7, 5, 1}, {3, 33, 4}, {1, 1001, 2}, {2, 0, 3}})
    for (ElementType indexType : {ElementType::kInt32, ElementType::kInt64})
      for (ElementType type : movementTypes()) {
        SCOPED_TRACE(std::to_string(outer) + " x " + std::to_string(depth) + " x " + std::to_string(inner) + " " +
                     toString(indexType) + " " + toString(type));
        const size_t es = elementBytes(type);
        std::mt19937 rng(3);
        std::vector<int64_t> indices, normalised;
        for (int64_t i = 0; i < int64_t(outer) * inner; ++i) {
          const int64_t v = int64_t(rng() % uint32_t(2 * depth + 3)) - depth - 1;  // some out of range both ways
          indices.push_back(v);
          normalised.push_back(v < 0 ? v + depth : v);
        }
        const Bytes values = randomElements(type, 2, 8);
        Bytes expected(byteSize(type, int64_t(outer) * depth * inner));
        withStorage(es, [&](auto tag) {
          using T = decltype(tag);
          const T* offOn = reinterpret_cast<const T*>(values.data());
          cpu::oneHot(normalised.data(), reinterpret_cast<T*>(expected.data()), outer, depth, inner, offOn[0],
                      offOn[1]);
        });
        DeviceBuffer idx(indexBytes(indices, indexType)), vals(values), dst(expected.size());
        KILN_CUDA_OK(oneHot(idx.get(), indexType, dst.get(), outer, depth, inner, vals.get(), type, nullptr));
        EXPECT_TRUE(sameElements(dst.download(), expected, es));
      }
}
