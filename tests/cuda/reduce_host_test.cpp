// Host-side checks of the reduce family (no GPU needed): the plan's layouts and the per-kind
// functors reproduce the CPU's reductions, launch geometries cover every element, the ArgMax fold
// gives the CPU's sequential answer in any order, and TopK's keys sort as the CPU's comparator.
#include "cuda/cuda_test_util.h"
#include "cuda/reduce_reference.h"

#include <kernels/cpu/reduce/reduce.h>
#include <kernels/cuda/reduce/arg_ops.h>
#include <kernels/cuda/reduce/reduce_ops.h>
#include <kernels/cuda/reduce/reduce_plan.h>
#include <kernels/cuda/reduce/topk_keys.h>

#include <algorithm>
#include <limits>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
using kiln::kernels::ReduceKind;

namespace {

template <class T>
using ComputeOf = std::conditional_t<kIsCpuNarrowFloat<T>, float, T>;

const ReduceKind kKinds[] = {ReduceKind::kSum, ReduceKind::kMean, ReduceKind::kMax, ReduceKind::kMin,
                             ReduceKind::kProd, ReduceKind::kL1, ReduceKind::kL2, ReduceKind::kLogSum,
                             ReduceKind::kLogSumExp, ReduceKind::kSumSquare};

template <Combine C, class A, class T>
A foldOutput(const T* origin, const ReducePlan& plan, ReduceMap map, A shift) {
  A acc = combineIdentity<C, A>();
  for (int64_t r = 0; r < plan.reduced; ++r)
    acc = combine<C>(acc, reduceMap(map, A(toDouble(origin[plan.folded.offsetOf(r)])), shift));
  return acc;
}

// The reduction the GPU kernel computes, run sequentially over the plan's layouts.
template <class T>
std::vector<T> reduceByPlan(ReduceKind kind, const std::vector<T>& in, const std::vector<int64_t>& dims,
                            const std::vector<bool>& reduced) {
  using A = ComputeOf<T>;
  const ReducePlan plan = planReduce(dims, reduced);
  std::vector<T> out(static_cast<size_t>(plan.outputs));
  for (int64_t o = 0; o < plan.outputs; ++o) {
    const T* origin = in.data() + plan.kept.offsetOf(o);
    A shift = A(0), acc;
    if (kind == ReduceKind::kLogSumExp)
      shift = logSumExpShift(foldOutput<Combine::kMax, A>(origin, plan, ReduceMap::kIdentity, A(0)));
    switch (combineOf(kind)) {
      case Combine::kSum: acc = foldOutput<Combine::kSum, A>(origin, plan, mapOf(kind), shift); break;
      case Combine::kProd: acc = foldOutput<Combine::kProd, A>(origin, plan, mapOf(kind), shift); break;
      case Combine::kMax: acc = foldOutput<Combine::kMax, A>(origin, plan, mapOf(kind), shift); break;
      default: acc = foldOutput<Combine::kMin, A>(origin, plan, mapOf(kind), shift); break;
    }
    out[size_t(o)] = fromDouble<T>(double(reduceFinish(kind, acc, plan.reduced, shift)));
  }
  return out;
}

template <class T>
void checkPlanAgainstCpu(uint32_t seed) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 60; ++trial) {
    const size_t rank = 1 + rng() % 5;
    std::vector<int64_t> dims(rank);
    std::vector<bool> reduced(rank);
    for (size_t d = 0; d < rank; ++d) {
      dims[d] = int64_t(rng() % 5);  // 0 and 1 included
      if (trial % 7 != 0 && dims[d] == 0) dims[d] = 3;
      reduced[d] = rng() & 1;
    }
    const int64_t n = elementCount(dims);
    for (ReduceKind kind : kKinds) {
      std::vector<T> in;
      if constexpr (std::is_integral_v<T>) in = randomValues<T>(n, 1, 3, seed + uint32_t(trial));
      else in = randomValues<T>(n, kind == ReduceKind::kProd || kind == ReduceKind::kLogSum ? 0.5 : -2, 2, seed + trial);
      const ReducePlan plan = planReduce(dims, reduced);
      EXPECT_EQ(int64_t(referenceReduce(kind, in, dims, reduced).size()), plan.outputs);
      EXPECT_TRUE(closeTo(reduceByPlan(kind, in, dims, reduced), referenceReduce(kind, in, dims, reduced)))
          << toString(elementTypeOf<T>()) << " kind " << int(kind) << " dims " << dimsText(dims);
    }
  }
}

}  // namespace

TEST(CudaReducePlan, FunctorsOverThePlanMatchCpuReductions) {
  checkPlanAgainstCpu<float>(1);
  checkPlanAgainstCpu<double>(2);
  checkPlanAgainstCpu<Float16>(3);
  checkPlanAgainstCpu<BFloat16>(4);
  checkPlanAgainstCpu<int32_t>(5);
  checkPlanAgainstCpu<int8_t>(6);
  checkPlanAgainstCpu<uint64_t>(7);
}

TEST(CudaReducePlan, MergesAndSplitsDims) {
  ReducePlan p = planReduce({2, 3, 1, 4, 5}, {false, true, true, true, false});
  EXPECT_EQ(p.outputs, 10);
  EXPECT_EQ(p.reduced, 12);
  EXPECT_EQ(p.kept.rank, 2);
  EXPECT_EQ(p.folded.rank, 1);
  EXPECT_EQ(p.folded.strides[0], 5);
  EXPECT_FALSE(p.innerReduced);
  p = planReduce({4, 1, 6}, {false, false, true});
  EXPECT_TRUE(p.innerReduced);
  EXPECT_EQ(p.outputs, 4);
  p = planReduce({3, 0, 2}, {false, true, false});
  EXPECT_EQ(p.reduced, 0);
  EXPECT_EQ(p.outputs, 6);
  p = planReduce({}, {});
  EXPECT_EQ(p.outputs, 1);
  EXPECT_EQ(p.reduced, 1);
  EXPECT_THROW(planReduce({2, 3}, {true}), std::invalid_argument);
}

TEST(CudaReducePlan, GeometryCoversEveryElement) {
  for (const auto& [dims, reduced] : std::vector<std::pair<std::vector<int64_t>, std::vector<bool>>>{
           {{1, 300000}, {false, true}},
           {{300000, 3}, {true, false}},
           {{7, 33}, {false, true}},
           {{4096, 4096}, {false, true}},
           {{3, 5}, {true, true}},
           {{100000, 2}, {false, true}},
           {{5, 1, 7}, {false, true, false}}}) {
    const ReducePlan plan = planReduce(dims, reduced);
    const ReduceGeometry g = reduceGeometry(plan);
    EXPECT_LE(g.lanes * g.outputLanes, kReduceBlockThreads);
    EXPECT_EQ(g.lanes & (g.lanes - 1), 0);
    EXPECT_EQ(g.outputLanes & (g.outputLanes - 1), 0);
    EXPECT_GE(g.blocks * g.outputLanes, plan.outputs);
    EXPECT_GE(g.splits * g.chunk, plan.reduced);
    EXPECT_LT((g.splits - 1) * g.chunk, std::max<int64_t>(plan.reduced, 1));
    EXPECT_LE(g.splits, 65535);
  }
  EXPECT_GT(reduceGeometry(planReduce({1, 300000}, {false, true})).splits, 1);  // one long row spreads out
  EXPECT_EQ(reduceGeometry(planReduce({4096, 4096}, {false, true})).splits, 1);
}

namespace {

// Folds candidates as a tree in a shuffled order (any order the GPU may take).
template <class A>
int64_t argByFold(const std::vector<A>& line, bool largest, bool selectLast, std::mt19937& rng) {
  std::vector<ArgCandidate<A>> candidates;
  for (size_t i = 0; i < line.size(); ++i) candidates.push_back(argCandidate(line[i], int64_t(i)));
  std::shuffle(candidates.begin(), candidates.end(), rng);
  const ArgOrder order{largest, selectLast};
  while (candidates.size() > 1) {
    std::vector<ArgCandidate<A>> next;
    for (size_t i = 0; i + 1 < candidates.size(); i += 2) next.push_back(order(candidates[i], candidates[i + 1]));
    if (candidates.size() % 2) next.push_back(candidates.back());
    candidates = next;
  }
  return argResult(candidates[0], line[0]);
}

}  // namespace

TEST(CudaArgOps, FoldInAnyOrderGivesTheCpuAnswer) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t n = 1 + rng() % 40;
    std::vector<float> line = randomValues<float>(n, -3, 3, uint32_t(trial));
    for (float& v : line) v = std::round(v);  // ties
    if (trial % 3 == 0) line[rng() % n] = NAN;
    if (trial % 5 == 0) line[0] = NAN;
    if (trial % 7 == 0) line[rng() % n] = -0.0f;
    for (bool largest : {false, true})
      for (bool selectLast : {false, true}) {
        int64_t want = -1;
        kiln::kernels::argExtreme<float>(line.data(), &want, 1, n, 1, largest, selectLast);
        ASSERT_EQ(argByFold(line, largest, selectLast, rng), want) << trial << " " << largest << selectLast;
      }
  }
}

namespace {

template <class T>
void checkTopKKeys(uint32_t seed) {
  using C = ComputeOf<T>;
  const int64_t n = 300;
  std::vector<T> line = randomValues<T>(n, std::is_unsigned_v<T> ? 0 : -5, 5, seed, false);
  if constexpr (kIsFloatLike<T>) {
    for (int64_t i = 0; i < n; i += 9) line[size_t(i)] = fromDouble<T>(NAN);
    for (int64_t i = 4; i < n; i += 13) line[size_t(i)] = fromDouble<T>(-0.0);
    line[5] = fromDouble<T>(INFINITY);
    line[6] = fromDouble<T>(-INFINITY);
  } else {
    line[0] = std::numeric_limits<T>::min();
    line[1] = std::numeric_limits<T>::max();
  }
  for (bool largest : {false, true}) {
    std::vector<T> values(static_cast<size_t>(n));
    std::vector<int64_t> want(static_cast<size_t>(n));
    kiln::kernels::topK<T>(line.data(), values.data(), want.data(), 1, n, 1, n, largest);
    std::vector<TopKItem> items;
    for (int64_t i = 0; i < n; ++i) {
      C v;
      if constexpr (kIsCpuNarrowFloat<T>) v = float(line[size_t(i)]);
      else v = line[size_t(i)];
      items.push_back({topKKey(v, largest), i});
    }
    std::sort(items.begin(), items.end(), itemBefore);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(items[size_t(i)].index, want[size_t(i)]) << toString(elementTypeOf<T>()) << " largest " << largest;
    EXPECT_TRUE(itemBefore(items.back(), kTopKSentinel));
  }
}

}  // namespace

TEST(CudaTopKKeys, SortLikeTheCpuComparator) {
  checkTopKKeys<float>(1);
  checkTopKKeys<double>(2);
  checkTopKKeys<Float16>(3);
  checkTopKKeys<BFloat16>(4);
  checkTopKKeys<int8_t>(5);
  checkTopKKeys<int64_t>(6);
  checkTopKKeys<uint32_t>(7);
  checkTopKKeys<uint64_t>(8);
}

namespace {

// Runs the TopK kernels' network sequentially: every step's pairs are disjoint, so one at a time
// gives what the parallel kernels give.
void runTileSizes(TopKItem* items, int64_t count, int64_t origin, int64_t firstSize, int64_t lastSize) {
  for (int64_t size = firstSize; size <= lastSize; size *= 2)
    for (int64_t stride = firstTileStride(size, count); stride > 0; stride /= 2)
      for (int64_t p = 0; p < count / 2; ++p) bitonicStep(items, origin, size, stride, p);
}

void runSchedule(std::vector<TopKItem>& items, int64_t padded) {
  const int64_t total = int64_t(items.size());
  for (const BitonicPass& pass : bitonicPasses(padded)) {
    if (pass.inTiles) {
      for (int64_t tile = 0; tile < total / kTopKTileItems; ++tile)
        runTileSizes(items.data() + tile * kTopKTileItems, kTopKTileItems, (tile * kTopKTileItems) % padded,
                     pass.firstSize, pass.lastSize);
    } else {
      for (int64_t p = 0; p < total / 2; ++p)
        bitonicStep(items.data() + (p / (padded / 2)) * padded, 0, pass.size, pass.stride, p % (padded / 2));
    }
  }
}

}  // namespace

TEST(CudaTopKKeys, TheKernelsScheduleSortsEveryLine) {
  std::mt19937_64 rng(9);
  for (int64_t padded : {int64_t(1), int64_t(2), int64_t(64), int64_t(2048)}) {  // one block in shared memory
    std::vector<TopKItem> items;
    for (int64_t i = 0; i < padded; ++i) items.push_back({rng() % 50, i});
    runTileSizes(items.data(), padded, 0, 2, padded);
    EXPECT_TRUE(std::is_sorted(items.begin(), items.end(), itemBefore)) << padded;
  }
  for (int64_t padded : {int64_t(4096), int64_t(8192), int64_t(32768)})
    for (int64_t lines : {int64_t(1), int64_t(3)}) {
      std::vector<TopKItem> items;
      for (int64_t line = 0; line < lines; ++line)
        for (int64_t i = 0; i < padded; ++i)
          items.push_back(i < padded - 100 ? TopKItem{rng() % 1000, i} : kTopKSentinel);  // padding at the end
      runSchedule(items, padded);
      for (int64_t line = 0; line < lines; ++line) {
        const auto begin = items.begin() + line * padded;
        EXPECT_TRUE(std::is_sorted(begin, begin + padded, itemBefore)) << padded << " line " << line;
      }
    }
}
