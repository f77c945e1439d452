// The pure parts of the cuBLASLt candidate list (backends/cuda/cublaslt_candidates.h): which split
// counts a launch's waves and depth call for, the candidate names both ways, and the order
// enumerated algorithms are kept in. The cuBLASLt calls themselves are the GPU tests' (tests/gpu).
#include "backends/backend.h"
#include "backends/cuda/cublaslt_candidates.h"

#include <gtest/gtest.h>

using namespace kiln::cuda;

namespace {

constexpr int kH200Sms = 132;

double wavesOf(int64_t tiles) { return double(tiles) / kH200Sms; }

TEST(SplitKCounts, SmallOutputsOfDeepProductsSplitUntilTheyFillTheGpu) {
  // BERT-base at batch 1 (M = 128) on the H200 with 128x128 tiles: 128x768 is 6 CTAs.
  EXPECT_EQ(splitKCounts(wavesOf(6), 3072), (std::vector<int>{8, 16, 32}));  // 128x768x3072
  EXPECT_EQ(splitKCounts(wavesOf(6), 768), (std::vector<int>{2, 4, 8}));     // 128x768x768: K/8 = 96
  EXPECT_EQ(splitKCounts(wavesOf(18), 768), (std::vector<int>{2, 4, 8}));    // 128x2304x768
  EXPECT_EQ(splitKCounts(wavesOf(24), 768), (std::vector<int>{2, 4, 8}));    // 128x3072x768: 8 -> 1.45 waves
  EXPECT_EQ(splitKCounts(wavesOf(48), 4096), (std::vector<int>{2, 4}));      // 8 splits: 2.9 waves
  EXPECT_EQ(splitKCounts(wavesOf(6), 3072, 1), (std::vector<int>{32}));
  EXPECT_EQ(splitKCounts(wavesOf(1), 1 << 20, 10), (std::vector<int>{2, 4, 8, 16, 32}));  // kSplitKMaxCount
}

TEST(SplitKCounts, NoneForFullLaunchesShallowProductsOrUnknownWaves) {
  EXPECT_TRUE(splitKCounts(wavesOf(132), 4096).empty());
  EXPECT_TRUE(splitKCounts(kSplitKBelowWaves, 4096).empty());
  EXPECT_TRUE(splitKCounts(3.5, 4096).empty());
  EXPECT_TRUE(splitKCounts(wavesOf(6), 127).empty());  // K/2 < kSplitKMinDepth
  EXPECT_EQ(splitKCounts(wavesOf(6), 128), (std::vector<int>{2}));
  EXPECT_TRUE(splitKCounts(0, 4096).empty());
  EXPECT_TRUE(splitKCounts(-1, 4096).empty());
  EXPECT_TRUE(splitKCounts(wavesOf(6), 4096, 0).empty());
}

TEST(CandidateNames, FormatAndParseBothWays) {
  const std::vector<std::pair<LtCandidateName, std::string>> cases = {
      {{.heuristicRank = 0}, "h0"},
      {{.heuristicRank = 3}, "h3"},
      {{.heuristicRank = 0, .splitK = 4, .reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE}, "h0.k4"},
      {{.heuristicRank = 12, .splitK = 16, .reduction = CUBLASLT_REDUCTION_SCHEME_INPLACE}, "h12.k16i"},
      {{.heuristicRank = 1, .splitK = 2, .reduction = CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE}, "h1.k2o"},
      {{.algoId = 23, .tile = 20, .stages = 8, .splitK = 1}, "a23.t20.s8.k1"},
      {{.algoId = 66, .tile = 0, .stages = 35, .splitK = 8, .reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE},
       "a66.t0.s35.k8"},
      {{.algoId = 6, .tile = 18, .stages = 0, .splitK = 4, .reduction = CUBLASLT_REDUCTION_SCHEME_INPLACE},
       "a6.t18.s0.k4i"},
  };
  for (const auto& [name, text] : cases) {
    SCOPED_TRACE(text);
    EXPECT_EQ(formatCandidateName(name), text);
    const auto parsed = parseCandidateName(text);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, name);
  }
}

TEST(CandidateNames, RefusesWhatIsNoName) {
  for (const char* text :
       {"", "h", "hx", "h0.", "h0.k", "h0.k1", "h0.k0", "h0.k4x", "h0.k4ii", "h0.t4", "0", "a23.t20", "a23.t20.s8",
        "a23.t20.s8.k", "a23.s8.t20.k1", "cublaslt.gemm.fp16.h0", "h1234567890", "a23.t20.s8.k1i"})
    EXPECT_FALSE(parseCandidateName(text).has_value()) << text;
}

TEST(CandidateNames, SplitCountOfAWholeTacticId) {
  EXPECT_EQ(splitKOfTacticId("cublaslt.gemm.fp16.h0"), 1);
  EXPECT_EQ(splitKOfTacticId("cublaslt.gemm.fp16.h0.k4"), 4);
  EXPECT_EQ(splitKOfTacticId("cublaslt.gemm.bf16.h2.k16i"), 16);
  EXPECT_EQ(splitKOfTacticId("cublaslt.gemm.tf32.a23.t20.s8.k8"), 8);
  EXPECT_EQ(splitKOfTacticId("cublaslt.gemm.fp32.a23.t20.s8.k1"), 1);
  EXPECT_EQ(splitKOfTacticId("cublaslt.gemm.fp16"), 1);
  EXPECT_EQ(splitKOfTacticId("cudnn.conv.fp16"), 1);
  EXPECT_EQ(splitKOfTacticId(""), 1);
}

EnumeratedAlgo found(int32_t id, uint32_t tile, int32_t splitK, double waves) {
  EnumeratedAlgo f;
  f.config.algoId = id, f.config.tile = tile, f.config.splitK = splitK;
  f.waves = waves;
  return f;
}

TEST(RankEnumerated, FullestLastWaveFirstAndAFewOfEachAlgorithm) {
  const std::vector<EnumeratedAlgo> all = {
      found(1, 20, 1, 0.05),   // 0: a twentieth of the GPU
      found(1, 20, 8, 0.36),   // 1
      found(1, 20, 16, 0.73),  // 2
      found(1, 15, 16, 2.9),   // 3: three waves, the last 90% full
      found(2, 20, 4, 0.73),   // 4: ties with 2, fewer splits first
      found(3, 18, 1, 1.0),    // 5: exactly one wave
      found(4, 18, 1, 0),      // 6: waves unknown: last
  };
  EXPECT_EQ(rankEnumerated(all, 10), (std::vector<size_t>{5, 3, 4, 2, 6}));  // algo 1 twice at most
  EXPECT_EQ(rankEnumerated(all, 3), (std::vector<size_t>{5, 3, 4}));
  EXPECT_EQ(rankEnumerated(all, 10, 1), (std::vector<size_t>{5, 3, 4, 6}));
  EXPECT_TRUE(rankEnumerated(all, 0).empty());
  EXPECT_TRUE(rankEnumerated({}, 4).empty());
}

TEST(LtSearch, SplitCopiesFromTheDefaultBreadthEnumerationAboveIt) {
  using kiln::kDefaultCandidateBudget;
  for (int budget : {1, 2, kDefaultCandidateBudget, 2 * kDefaultCandidateBudget, 4 * kDefaultCandidateBudget}) {
    SCOPED_TRACE(budget);
    const LtSearch search = LtSearch::forBudget(budget);
    EXPECT_EQ(search.heuristicCount, budget);
    EXPECT_EQ(search.splitCopies, budget >= kDefaultCandidateBudget);
    EXPECT_EQ(search.enumeratedCount, budget > kDefaultCandidateBudget ? size_t(budget) : 0u);
    EXPECT_EQ(search.maxWorkspace, kCublasWorkspaceBytes);
  }
  EXPECT_EQ(LtSearch::forBudget(0).heuristicCount, 1);
}

}  // namespace
