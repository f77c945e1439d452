// The CUDA indexing kernels (Gather, GatherElements, GatherND, ScatterND, ScatterElements)
// against the CPU kernels. Host-only tests run the kernels' index geometry on host memory.
#include "layout_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/layout/gather_scatter.h>
#include <kernels/cuda/indexing/gather.h>
#include <kernels/cuda/indexing/index_geometry.h>
#include <kernels/cuda/indexing/scatter.h>

#include <functional>
#include <map>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

using Dims = std::vector<int64_t>;

// Seeded indices in [-dim, dim) (negative ones count from the end), plus `bad` ones out of range.
std::vector<int64_t> randomIndices(int64_t count, int64_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(count));
  for (int64_t& i : v) i = int64_t(rng() % uint32_t(2 * dim)) - dim;
  return v;
}

std::vector<int64_t> normalised(std::vector<int64_t> v, int64_t dim) {
  for (int64_t& i : v) i = i < 0 ? i + dim : i;
  return v;
}

// Calls fn(tag) with the CPU kernels' type for a numeric ElementType.
template <class Fn>
void withCpuNumeric(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::kFloat32: return fn(float{});
    case ElementType::kFloat64: return fn(double{});
    case ElementType::kFloat16: return fn(cpu::Float16{});
    case ElementType::kBFloat16: return fn(cpu::BFloat16{});
    case ElementType::kInt8: return fn(int8_t{});
    case ElementType::kInt16: return fn(int16_t{});
    case ElementType::kInt32: return fn(int32_t{});
    case ElementType::kInt64: return fn(int64_t{});
    case ElementType::kUInt8: return fn(uint8_t{});
    case ElementType::kUInt16: return fn(uint16_t{});
    case ElementType::kUInt32: return fn(uint32_t{});
    case ElementType::kUInt64: return fn(uint64_t{});
    default: FAIL() << "not numeric: " << toString(type);
  }
}

Bytes cpuGatherAxis(const Bytes& data, const Dims& dataDims, int axis, const std::vector<int64_t>& indices, size_t es) {
  const int64_t outer = countOf(Dims(dataDims.begin(), dataDims.begin() + axis));
  const int64_t inner = countOf(Dims(dataDims.begin() + axis + 1, dataDims.end()));
  Bytes out(size_t(outer * int64_t(indices.size()) * inner) * es);
  const std::vector<int64_t> fixed = normalised(indices, dataDims[size_t(axis)]);
  withStorage(es, [&](auto tag) {
    using T = decltype(tag);
    if (!out.empty())
      cpu::gatherAxis(reinterpret_cast<const T*>(data.data()), reinterpret_cast<T*>(out.data()), outer,
                      dataDims[size_t(axis)], inner, fixed.data(), int64_t(fixed.size()));
  });
  return out;
}

Bytes cpuGatherSlices(const Bytes& data, const std::vector<int64_t>& offsets, int64_t slice, size_t es) {
  Bytes out(size_t(int64_t(offsets.size()) * slice) * es);
  withStorage(es, [&](auto tag) {
    using T = decltype(tag);
    cpu::gatherSlices(reinterpret_cast<const T*>(data.data()), reinterpret_cast<T*>(out.data()), offsets.data(),
                      int64_t(offsets.size()), slice);
  });
  return out;
}

// GatherND / ScatterND slice offsets by plain loops (what the engine's CPU op computes).
std::vector<int64_t> tupleOffsets(const Dims& dataDims, const Dims& indexDims, int batchDims,
                                  const std::vector<int64_t>& indices) {
  const int64_t tuple = indexDims.back(), tuples = int64_t(indices.size()) / tuple;
  const Dims strides = contiguousStrides(dataDims);
  const int64_t batchSize = countOf(Dims(dataDims.begin() + batchDims, dataDims.end()));
  const int64_t perBatch =
      tuples / std::max<int64_t>(1, countOf(Dims(indexDims.begin(), indexDims.begin() + batchDims)));
  std::vector<int64_t> offsets;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = t / std::max<int64_t>(1, perBatch) * batchSize;
    for (int64_t j = 0; j < tuple; ++j) {
      const int64_t dim = dataDims[size_t(batchDims + j)], v = indices[size_t(t * tuple + j)];
      offset += (v < 0 ? v + dim : v) * strides[size_t(batchDims + j)];
    }
    offsets.push_back(offset);
  }
  return offsets;
}

// Per-axis random indices for a [..., tuple] index tensor.
std::vector<int64_t> randomTuples(const Dims& dataDims, const Dims& indexDims, int batchDims, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t tuple = indexDims.back();
  std::vector<int64_t> v(size_t(countOf(indexDims)));
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t dim = dataDims[size_t(batchDims) + i % size_t(tuple)];
    v[i] = int64_t(rng() % uint32_t(2 * dim)) - dim;
  }
  return v;
}

struct GatherCase {
  Dims data;
  int axis;
  int64_t indexCount;
};
const std::vector<GatherCase> kGatherCases{{{7}, 0, 5},          {{33, 8}, 0, 17},   {{33, 8}, 1, 3},
                                           {{2, 1001}, 1, 1001}, {{3, 5, 16}, 1, 7}, {{2, 3, 4, 5, 6}, 2, 9},
                                           {{4, 1}, 0, 1},       {{5, 6}, 0, 0}};

struct ElementsCase {
  Dims data, index;
  int axis;
};
const std::vector<ElementsCase> kElementsCases{{{7}, {11}, 0},
                                               {{33, 8}, {20, 8}, 0},
                                               {{33, 8}, {33, 3}, 1},
                                               {{3, 5, 16}, {2, 9, 16}, 1},
                                               {{2, 3, 4, 5, 6}, {2, 3, 7, 5, 6}, 2},
                                               {{1, 1001}, {1, 1001}, 1},
                                               {{4, 3}, {0, 3}, 0}};

struct TupleCase {
  Dims data, index;
  int batchDims;
};
const std::vector<TupleCase> kTupleCases{{{7}, {5, 1}, 0},
                                         {{33, 8}, {4, 2}, 0},
                                         {{33, 8}, {3, 1}, 0},
                                         {{2, 3, 16}, {2, 4, 1}, 1},
                                         {{2, 3, 4, 5}, {2, 3, 2, 1}, 2},
                                         {{2, 3, 4, 5, 6}, {7, 3}, 0},
                                         {{3, 1001}, {3, 2, 1}, 1},
                                         {{4, 5}, {0, 2}, 0}};

}  // namespace

TEST(CudaIndexingHost, GeometryMatchesTheCpuKernels) {
  for (const GatherCase& c : kGatherCases) {
    SCOPED_TRACE("gather " + dimsText(c.data) + " axis " + std::to_string(c.axis));
    const Bytes data = randomElements(ElementType::kInt32, countOf(c.data), 1);
    const std::vector<int64_t> indices = randomIndices(c.indexCount, c.data[size_t(c.axis)], 2);
    const auto g = gatherGeometry(c.data, c.indexCount, c.axis);
    ASSERT_TRUE(g.has_value());
    Bytes out(size_t(g->count()) * 4);
    for (int64_t i = 0; i < g->count(); ++i) {
      const int64_t from = g->sourceOffset(i, {indices.data(), true});
      ASSERT_GE(from, 0);
      std::memcpy(&out[size_t(i) * 4], &data[size_t(from) * 4], 4);
    }
    EXPECT_TRUE(sameElements(out, cpuGatherAxis(data, c.data, c.axis, indices, 4), 4));
  }
  for (const ElementsCase& c : kElementsCases) {
    SCOPED_TRACE("elements " + dimsText(c.data) + " index " + dimsText(c.index));
    const std::vector<int64_t> indices = randomIndices(countOf(c.index), c.data[size_t(c.axis)], 3);
    std::vector<int64_t> expected(indices.size());
    EXPECT_EQ(cpu::elementOffsets(c.data, c.index, indices.data(), c.axis, expected.data()), -1);
    const auto g = axisGeometry(c.data, c.index, c.axis);
    ASSERT_TRUE(g.has_value());
    const std::vector<int32_t> narrow(indices.begin(), indices.end());
    for (size_t i = 0; i < indices.size(); ++i) {
      ASSERT_EQ(g->dataOffset(int64_t(i), {indices.data(), true}), expected[i]) << i;
      ASSERT_EQ(g->dataOffset(int64_t(i), {narrow.data(), false}), expected[i]) << i;
    }
  }
  for (const TupleCase& c : kTupleCases) {
    SCOPED_TRACE("tuples " + dimsText(c.data) + " index " + dimsText(c.index));
    const std::vector<int64_t> indices = randomTuples(c.data, c.index, c.batchDims, 4);
    const std::vector<int64_t> expected = tupleOffsets(c.data, c.index, c.batchDims, indices);
    const auto g = tupleGeometry(c.data, c.index, c.batchDims);
    ASSERT_TRUE(g.has_value());
    ASSERT_EQ(g->tupleCount, int64_t(expected.size()));
    for (int64_t t = 0; t < g->tupleCount; ++t)
      ASSERT_EQ(g->sliceOffset(t, {indices.data(), true}), expected[size_t(t)]);
  }
}

TEST(CudaIndexingHost, OutOfRangeIndicesAndBadShapesAreCaught) {
  const std::vector<int64_t> indices{0, -3, 3, -4};
  const auto g = gatherGeometry({3, 2}, 4, 0);
  EXPECT_GE(g->sourceOffset(0, {indices.data(), true}), 0);
  EXPECT_GE(g->sourceOffset(2, {indices.data(), true}), 0);   // -3 -> 0
  EXPECT_EQ(g->sourceOffset(4, {indices.data(), true}), -1);  // 3
  EXPECT_EQ(g->sourceOffset(7, {indices.data(), true}), -1);  // -4
  const auto t = tupleGeometry({3, 4}, {2, 2}, 0);
  const std::vector<int64_t> tuples{2, 3, 1, 4};
  EXPECT_EQ(t->sliceOffset(0, {tuples.data(), true}), 11);
  EXPECT_EQ(t->sliceOffset(1, {tuples.data(), true}), -1);
  EXPECT_FALSE(axisGeometry({3, 4}, {3, 5}, 0).has_value());  // larger than data off the axis
  EXPECT_TRUE(axisGeometry({3, 4}, {5, 4}, 0).has_value());
  EXPECT_FALSE(tupleGeometry({3, 4}, {2, 3}, 0).has_value());  // tuple longer than the rank
  EXPECT_FALSE(tupleGeometry({3, 4}, {2, 1}, 1).has_value());  // batch dims differ
  EXPECT_FALSE(gatherGeometry({3}, 2, 1).has_value());
}

// ----------------------------------------------------------------------------------------------
// GPU tests

namespace {

struct DeviceFlag {
  DeviceBuffer flag{Bytes(4, 0)};
  int* get() const { return flag.as<int>(); }
  int value() const {
    const Bytes b = flag.download();
    int v;
    std::memcpy(&v, b.data(), 4);
    return v;
  }
};

}  // namespace

TEST(CudaIndexing, GatherMatchesTheCpuKernel) {
  KILN_REQUIRE_GPU();
  for (const GatherCase& c : kGatherCases)
    for (ElementType indexType : {ElementType::kInt32, ElementType::kInt64})
      for (ElementType type : movementTypes()) {
        SCOPED_TRACE("gather " + dimsText(c.data) + " axis " + std::to_string(c.axis) + " " + toString(indexType) +
                     " " + toString(type));
        const size_t es = elementBytes(type);
        const Bytes data = randomElements(type, countOf(c.data), 5);
        const std::vector<int64_t> indices = randomIndices(c.indexCount, c.data[size_t(c.axis)], 6);
        const Bytes expected = cpuGatherAxis(data, c.data, c.axis, indices, es);
        DeviceBuffer src(data), idx(indexBytes(indices, indexType)), dst(expected.size());
        DeviceFlag flag;
        KILN_CUDA_OK(gather(src.get(), c.data, idx.get(), c.indexCount, indexType, c.axis, dst.get(), type, flag.get(),
                            nullptr));
        EXPECT_TRUE(sameElements(dst.download(), expected, es));
        EXPECT_EQ(flag.value(), 0);
      }
}

TEST(CudaIndexing, GatherWritesZeroAndFlagsOutOfRangeIndices) {
  KILN_REQUIRE_GPU();
  const Dims dims{4, 3};
  const std::vector<int64_t> indices{1, 4, -5, -1};
  const Bytes data = randomElements(ElementType::kFloat32, 12, 1);
  DeviceBuffer src(data), idx(indexBytes(indices, ElementType::kInt64)), dst(byteSize(ElementType::kFloat32, 12));
  DeviceFlag flag;
  KILN_CUDA_OK(gather(src.get(), dims, idx.get(), 4, ElementType::kInt64, 0, dst.get(), ElementType::kFloat32,
                      flag.get(), nullptr));
  Bytes expected(48, 0);
  std::memcpy(&expected[0], &data[12], 12);   // row 1
  std::memcpy(&expected[36], &data[36], 12);  // row -1 = 3
  EXPECT_TRUE(sameElements(dst.download(), expected, 4));
  EXPECT_EQ(flag.value(), 1);
  // Without a flag the kernel still stays in bounds.
  KILN_CUDA_OK(gather(src.get(), dims, idx.get(), 4, ElementType::kInt64, 0, dst.get(), ElementType::kFloat32, nullptr,
                      nullptr));
  EXPECT_TRUE(sameElements(dst.download(), expected, 4));
  EXPECT_EQ(gather(src.get(), dims, idx.get(), 4, ElementType::kFloat32, 0, dst.get(), ElementType::kFloat32, nullptr,
                   nullptr),
            cudaErrorInvalidValue);
}

TEST(CudaIndexing, GatherElementsAndGatherNDMatchTheCpuKernels) {
  KILN_REQUIRE_GPU();
  for (ElementType indexType : {ElementType::kInt32, ElementType::kInt64})
    for (ElementType type : movementTypes()) {
      const size_t es = elementBytes(type);
      for (const ElementsCase& c : kElementsCases) {
        SCOPED_TRACE("elements " + dimsText(c.data) + " index " + dimsText(c.index) + " " + toString(type));
        const Bytes data = randomElements(type, countOf(c.data), 7);
        const std::vector<int64_t> indices = randomIndices(countOf(c.index), c.data[size_t(c.axis)], 8);
        std::vector<int64_t> offsets(indices.size());
        cpu::elementOffsets(c.data, c.index, indices.data(), c.axis, offsets.data());
        const Bytes expected = cpuGatherSlices(data, offsets, 1, es);
        DeviceBuffer src(data), idx(indexBytes(indices, indexType)), dst(expected.size());
        DeviceFlag flag;
        KILN_CUDA_OK(gatherElements(src.get(), c.data, idx.get(), c.index, indexType, c.axis, dst.get(), type,
                                    flag.get(), nullptr));
        EXPECT_TRUE(sameElements(dst.download(), expected, es));
        EXPECT_EQ(flag.value(), 0);
      }
      for (const TupleCase& c : kTupleCases) {
        SCOPED_TRACE("gather_nd " + dimsText(c.data) + " index " + dimsText(c.index) + " " + toString(type));
        const Bytes data = randomElements(type, countOf(c.data), 9);
        const std::vector<int64_t> indices = randomTuples(c.data, c.index, c.batchDims, 10);
        const int64_t slice = countOf(Dims(c.data.begin() + c.batchDims + c.index.back(), c.data.end()));
        const Bytes expected = cpuGatherSlices(data, tupleOffsets(c.data, c.index, c.batchDims, indices), slice, es);
        DeviceBuffer src(data), idx(indexBytes(indices, indexType)), dst(expected.size());
        DeviceFlag flag;
        KILN_CUDA_OK(gatherND(src.get(), c.data, idx.get(), c.index, indexType, c.batchDims, dst.get(), type,
                              flag.get(), nullptr));
        EXPECT_TRUE(sameElements(dst.download(), expected, es));
        EXPECT_EQ(flag.value(), 0);
      }
    }
}

namespace {

bool isUnsigned(ElementType type) {
  return type == ElementType::kUInt8 || type == ElementType::kUInt16 || type == ElementType::kUInt32 ||
         type == ElementType::kUInt64;
}

// Dyadic values (+-2^k, k in [-1, 1]) as `type`, so sums and products of a dozen are exact in every
// float type whatever order the atomics land in; small integers for the integer types.
Bytes exactValues(ElementType type, int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) {
    const bool negative = (rng() & 1) && !isUnsigned(type);
    if (isFloatType(type))
      v = (negative ? -1 : 1) * std::ldexp(1.0, int(rng() % 3) - 1);
    else
      v = double(int(rng() % 5) + 1) * (negative ? -1 : 1);
  }
  return fromValues(values, type);
}

cpu::ScatterReduction cpuReduction(ScatterReduction r) {
  switch (r) {
    case ScatterReduction::kAdd: return cpu::ScatterReduction::kAdd;
    case ScatterReduction::kMul: return cpu::ScatterReduction::kMul;
    case ScatterReduction::kMax: return cpu::ScatterReduction::kMax;
    case ScatterReduction::kMin: return cpu::ScatterReduction::kMin;
    default: return cpu::ScatterReduction::kNone;
  }
}

// What the CPU kernels give: data with the slices at `offsets` written or reduced in order.
Bytes cpuScatter(Bytes data, const Bytes& updates, const std::vector<int64_t>& offsets, int64_t slice,
                 ScatterReduction reduction, ElementType type) {
  if (reduction == ScatterReduction::kNone) {
    withStorage(elementBytes(type), [&](auto tag) {
      using T = decltype(tag);
      cpu::scatterSlices(reinterpret_cast<T*>(data.data()), reinterpret_cast<const T*>(updates.data()), offsets.data(),
                         int64_t(offsets.size()), slice);
    });
  } else {
    withCpuNumeric(type, [&](auto tag) {
      using T = decltype(tag);
      cpu::scatterSlicesReduce(reinterpret_cast<T*>(data.data()), reinterpret_cast<const T*>(updates.data()),
                               offsets.data(), int64_t(offsets.size()), slice, cpuReduction(reduction));
    });
  }
  return data;
}

// Indices into a short range of the axis, so most slots receive several updates.
std::vector<int64_t> crowdedIndices(int64_t count, int64_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(count));
  const int64_t range = std::max<int64_t>(1, std::min<int64_t>(dim, (count + 2) / 3));  // about 3 updates a slot
  for (int64_t& i : v) {
    i = int64_t(rng() % uint32_t(range));
    if (rng() & 1) i -= dim;  // the same position counted from the end
  }
  return v;
}

constexpr ScatterReduction kReductions[] = {ScatterReduction::kNone, ScatterReduction::kAdd, ScatterReduction::kMul,
                                            ScatterReduction::kMax, ScatterReduction::kMin};
const ElementType kReductionTypes[] = {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                                       ElementType::kFloat64, ElementType::kInt64,   ElementType::kInt32,
                                       ElementType::kUInt8,   ElementType::kInt8,    ElementType::kUInt16};

const std::vector<ElementsCase> kScatterElementsCases{{{7}, {11}, 0},
                                                      {{33, 8}, {40, 8}, 0},
                                                      {{33, 8}, {33, 9}, 1},
                                                      {{3, 5, 16}, {2, 9, 16}, 1},
                                                      {{2, 3, 4, 5, 6}, {2, 3, 7, 5, 6}, 2},
                                                      {{1, 1001}, {1, 1001}, 1},
                                                      {{4, 3}, {0, 3}, 0}};
const std::vector<std::pair<Dims, Dims>> kScatterNDCases{
    {{7}, {5, 1}},          {{33, 8}, {40, 1}}, {{33, 8}, {9, 2}}, {{2, 3, 16}, {4, 2}}, {{2, 3, 4, 5, 6}, {7, 3}},
    {{3, 1001}, {2, 2, 1}}, {{4, 5}, {0, 2}}};

// ScatterND tuples where every three in a row address the same slice (some counted from the end).
std::vector<int64_t> repeatedTuples(const Dims& dataDims, const Dims& indexDims) {
  const int64_t tuple = indexDims.back(), tuples = countOf(indexDims) / tuple;
  std::vector<int64_t> indices;
  for (int64_t j = 0; j < tuples; ++j) {
    std::mt19937 rng(uint32_t(j / 3));
    for (int64_t k = 0; k < tuple; ++k) {
      const int64_t dim = dataDims[size_t(k)], v = int64_t(rng() % uint32_t(dim));
      indices.push_back(rng() & 1 ? v - dim : v);
    }
  }
  return indices;
}

// The GPU's deterministic 'none' on the host: each slot keeps its highest claimant, which writes.
Bytes emulateLastWins(Bytes data, const Bytes& updates, const std::vector<int64_t>& offsets, int64_t slice, size_t es) {
  std::map<int64_t, int64_t> winner;
  for (size_t t = 0; t < offsets.size(); ++t) winner[offsets[t]] = std::max<int64_t>(winner[offsets[t]], int64_t(t));
  for (size_t t = 0; t < offsets.size(); ++t)
    if (winner[offsets[t]] == int64_t(t))
      std::memcpy(&data[size_t(offsets[t]) * es], &updates[t * size_t(slice) * es], size_t(slice) * es);
  return data;
}

}  // namespace

// The scatter tests' references, and the GPU's last-wins rule on the kernels' geometry, agree with
// the CPU kernels on the same cases (duplicates included).
TEST(CudaIndexingHost, ScatterReferencesAndLastWinsAgree) {
  for (const ElementsCase& c : kScatterElementsCases) {
    SCOPED_TRACE("scatter_elements " + dimsText(c.data) + " index " + dimsText(c.index));
    const Bytes data = exactValues(ElementType::kFloat32, countOf(c.data), 11);
    const Bytes updates = exactValues(ElementType::kFloat32, countOf(c.index), 12);
    const std::vector<int64_t> indices = crowdedIndices(countOf(c.index), c.data[size_t(c.axis)], 13);
    std::vector<int64_t> offsets(indices.size());
    ASSERT_EQ(cpu::elementOffsets(c.data, c.index, indices.data(), c.axis, offsets.data()), -1);
    const auto g = axisGeometry(c.data, c.index, c.axis);
    std::vector<int64_t> gpuOffsets;
    for (size_t i = 0; i < indices.size(); ++i) gpuOffsets.push_back(g->dataOffset(int64_t(i), {indices.data(), true}));
    EXPECT_EQ(gpuOffsets, offsets);
    EXPECT_TRUE(sameElements(emulateLastWins(data, updates, gpuOffsets, 1, 4),
                             cpuScatter(data, updates, offsets, 1, ScatterReduction::kNone, ElementType::kFloat32), 4));
    EXPECT_EQ(scatterElementsWorkspaceBytes(c.data, c.index, ScatterReduction::kNone),
              indices.empty() ? 0 : size_t(countOf(c.data)) * 4);
    EXPECT_EQ(scatterElementsWorkspaceBytes(c.data, c.index, ScatterReduction::kAdd), 0u);
  }
  // The reductions' references (exact on these values) against sequential double arithmetic.
  for (const ElementsCase& c : kScatterElementsCases)
    for (ScatterReduction reduction : kReductions)
      for (ElementType type : kReductionTypes) {
        if (reduction == ScatterReduction::kNone) continue;
        SCOPED_TRACE("scatter_elements " + dimsText(c.data) + " reduction " + std::to_string(int(reduction)) + " " +
                     toString(type));
        const Bytes data = exactValues(type, countOf(c.data), 11), updates = exactValues(type, countOf(c.index), 12);
        const std::vector<int64_t> indices = crowdedIndices(countOf(c.index), c.data[size_t(c.axis)], 13);
        std::vector<int64_t> offsets(indices.size());
        cpu::elementOffsets(c.data, c.index, indices.data(), c.axis, offsets.data());
        std::vector<double> values = valuesOf(data, type);
        const std::vector<double> u = valuesOf(updates, type);
        for (size_t i = 0; i < offsets.size(); ++i) {
          double& v = values[size_t(offsets[i])];
          switch (reduction) {
            case ScatterReduction::kAdd: v += u[i]; break;
            case ScatterReduction::kMul: v *= u[i]; break;
            case ScatterReduction::kMax: v = std::max(v, u[i]); break;
            default: v = std::min(v, u[i]); break;
          }
        }
        // Integers wrap on the way back, as the kernels' do.
        Bytes expected(data.size());
        for (size_t i = 0; i < values.size(); ++i)
          storeBits(expected, type, int64_t(i),
                    isFloatType(type) ? bitsOf(values[i], type)
                                      : uint64_t(int64_t(std::fmod(values[i], 18446744073709551616.0))));
        EXPECT_TRUE(sameElements(cpuScatter(data, updates, offsets, 1, reduction, type), expected, elementBytes(type)));
      }
  for (const auto& [dataDims, indexDims] : kScatterNDCases) {
    SCOPED_TRACE("scatter_nd " + dimsText(dataDims) + " index " + dimsText(indexDims));
    const std::vector<int64_t> indices = repeatedTuples(dataDims, indexDims);
    const int64_t slice = countOf(Dims(dataDims.begin() + indexDims.back(), dataDims.end()));
    const std::vector<int64_t> offsets = tupleOffsets(dataDims, indexDims, 0, indices);
    const auto g = tupleGeometry(dataDims, indexDims, 0);
    ASSERT_EQ(g->sliceElements, slice);
    std::vector<int64_t> gpuOffsets;
    for (int64_t t = 0; t < g->tupleCount; ++t) gpuOffsets.push_back(g->sliceOffset(t, {indices.data(), true}));
    EXPECT_EQ(gpuOffsets, offsets);
    const Bytes data = exactValues(ElementType::kInt64, countOf(dataDims), 14);
    const Bytes updates = exactValues(ElementType::kInt64, g->tupleCount * slice, 15);
    EXPECT_TRUE(sameElements(emulateLastWins(data, updates, gpuOffsets, slice, 8),
                             cpuScatter(data, updates, offsets, slice, ScatterReduction::kNone, ElementType::kInt64),
                             8));
  }
}

namespace {}  // namespace

TEST(CudaIndexing, ScatterElementsMatchesTheCpuKernelWithDuplicates) {
  KILN_REQUIRE_GPU();
  for (const ElementsCase& c : kScatterElementsCases)
    for (ScatterReduction reduction : kReductions)
      for (ElementType type : kReductionTypes)
        for (bool inPlace : {false, true}) {
          SCOPED_TRACE("scatter_elements " + dimsText(c.data) + " index " + dimsText(c.index) + " reduction " +
                       std::to_string(int(reduction)) + " " + toString(type) + (inPlace ? " in place" : ""));
          const size_t es = elementBytes(type);
          const Bytes data = exactValues(type, countOf(c.data), 11), updates = exactValues(type, countOf(c.index), 12);
          const std::vector<int64_t> indices = crowdedIndices(countOf(c.index), c.data[size_t(c.axis)], 13);
          std::vector<int64_t> offsets(indices.size());
          cpu::elementOffsets(c.data, c.index, indices.data(), c.axis, offsets.data());
          const Bytes expected = cpuScatter(data, updates, offsets, 1, reduction, type);
          const size_t workspaceBytes = scatterElementsWorkspaceBytes(c.data, c.index, reduction);
          DeviceBuffer src(data), idx(indexBytes(indices, ElementType::kInt64)), upd(updates), dst(data.size()),
              workspace(workspaceBytes);
          DeviceFlag flag;
          void* out = inPlace ? src.get() : dst.get();
          auto launch = [&] {
            return scatterElements(src.get(), c.data, idx.get(), c.index, ElementType::kInt64, c.axis, upd.get(), out,
                                   reduction, type, workspace.get(), workspaceBytes, flag.get(), nullptr);
          };
          if (inPlace) {  // the data is the output: it cannot be poisoned
            KILN_CUDA_OK(launch());
            EXPECT_TRUE(sameElements(src.download(), expected, es));
          } else {
            EXPECT_TRUE(writesEveryElement(dst, launch, expected, es));
          }
          EXPECT_EQ(flag.value(), 0);
        }
}

TEST(CudaIndexing, ScatterNDMatchesTheCpuKernelWithDuplicates) {
  KILN_REQUIRE_GPU();
  for (const auto& [dataDims, indexDims] : kScatterNDCases)
    for (ScatterReduction reduction : kReductions)
      for (ElementType type : kReductionTypes)
        for (ElementType indexType : {ElementType::kInt32, ElementType::kInt64}) {
          SCOPED_TRACE("scatter_nd " + dimsText(dataDims) + " index " + dimsText(indexDims) + " reduction " +
                       std::to_string(int(reduction)) + " " + toString(type) + " " + toString(indexType));
          const size_t es = elementBytes(type);
          const int64_t tuple = indexDims.back(), tuples = countOf(indexDims) / tuple;
          const int64_t slice = countOf(Dims(dataDims.begin() + tuple, dataDims.end()));
          const std::vector<int64_t> indices = repeatedTuples(dataDims, indexDims);
          const Bytes data = exactValues(type, countOf(dataDims), 14), updates = exactValues(type, tuples * slice, 15);
          const Bytes expected =
              cpuScatter(data, updates, tupleOffsets(dataDims, indexDims, 0, indices), slice, reduction, type);
          const size_t workspaceBytes = scatterNDWorkspaceBytes(dataDims, indexDims, reduction);
          DeviceBuffer src(data), idx(indexBytes(indices, indexType)), upd(updates), dst(data.size()),
              workspace(workspaceBytes);
          DeviceFlag flag;
          EXPECT_TRUE(writesEveryElement(
              dst,
              [&] {
                return scatterND(src.get(), dataDims, idx.get(), indexDims, indexType, upd.get(), dst.get(), reduction,
                                 type, workspace.get(), workspaceBytes, flag.get(), nullptr);
              },
              expected, es));
          EXPECT_EQ(flag.value(), 0);
        }
}

TEST(CudaIndexing, ScatterSkipsAndFlagsOutOfRangeIndices) {
  KILN_REQUIRE_GPU();
  for (ElementType type : movementTypes()) {
    SCOPED_TRACE(toString(type));
    const Dims dims{4, 3};
    const std::vector<int64_t> indices{1, 9, -1};  // tuples of length 1: rows
    const Bytes data = randomElements(type, 12, 2), updates = randomElements(type, 9, 3);
    Bytes expected = data;
    const size_t es = elementBytes(type);
    std::memcpy(&expected[3 * es], &updates[0], 3 * es);
    std::memcpy(&expected[9 * es], &updates[6 * es], 3 * es);
    for (bool withWorkspace : {false, true}) {
      const size_t bytes = withWorkspace ? scatterNDWorkspaceBytes(dims, {3, 1}, ScatterReduction::kNone) : 0;
      DeviceBuffer src(data), idx(indexBytes(indices, ElementType::kInt32)), upd(updates), dst(data.size()),
          workspace(bytes);
      DeviceFlag flag;
      KILN_CUDA_OK(scatterND(src.get(), dims, idx.get(), {3, 1}, ElementType::kInt32, upd.get(), dst.get(),
                             ScatterReduction::kNone, type, withWorkspace ? workspace.get() : nullptr, bytes,
                             flag.get(), nullptr));
      EXPECT_TRUE(sameElements(dst.download(), expected, es));
      EXPECT_EQ(flag.value(), 1);
    }
  }
  DeviceBuffer any(64);
  EXPECT_EQ(scatterND(any.get(), {4}, any.get(), {1, 1}, ElementType::kInt64, any.get(), any.get(),
                      ScatterReduction::kAdd, ElementType::kBool, nullptr, 0, nullptr, nullptr),
            cudaErrorInvalidValue);
}
