#pragma once
// The cuBLASLt algorithms worth timing for one product (an LtGemm), for every cuBLASLt user that
// lists tactics: the heuristic's ranked list, split-K copies of its entries where the output
// launches too few CTAs to fill the GPU, and at the wider optimisation levels algorithms
// enumerated by id over their tiles, stages and split counts. Each is validated by
// cublasLtMatmulAlgoCheck for the product (its epilogue included) and named by a stable suffix
// the caller appends to its tactic base ("cublaslt.gemm.fp16" + "." + "h0.k4").
//
// Names:  h<i>                  the heuristic's i-th result, as it gave it
//         h<i>.k<s>[i|o]        that algorithm with K split s ways (reduced in the compute type,
//                               or i: in place in the output, o: in the output type)
//         a<id>.t<tile>.s<stages>.k<s>[i|o]
//                               algorithm id, cublasLtMatmulTile_t, cublasLtMatmulStages_t and
//                               split count as cublasLtMatmulAlgoInit / AlgoConfigSetAttribute set
//                               them (enumerated; k1: unsplit)
#include "cublaslt_matmul.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

// ---- Pure logic (no cuBLASLt calls; unit-tested on the host) ----

// Split only below this many waves (cuBLASLt's wavesCount: the launch's CTAs over what the SMs
// hold at once): an output of fewer tiles than SMs leaves most of the GPU idle over the whole K.
inline constexpr double kSplitKBelowWaves = 0.8;
// ... and no further than this many waves after the split.
inline constexpr double kSplitKMaxWaves = 1.5;
// Each split keeps at least this much of K (a few k-tiles: less is all reduction and no product).
inline constexpr int64_t kSplitKMinDepth = 64;
inline constexpr int kSplitKMaxCount = 32;

// The split counts (powers of two, ascending) worth timing for a product of depth `k` whose
// unsplit launch fills `waves` of the GPU: those keeping within kSplitKMaxWaves and
// kSplitKMinDepth, the largest `maxCounts` of them (the ones closest to filling the GPU). Empty at
// or above kSplitKBelowWaves, for unknown waves (<= 0) and for K too shallow to split.
std::vector<int> splitKCounts(double waves, int64_t k, int maxCounts = 3);

// An algorithm's configuration as cuBLASLt's AlgoConfig attributes hold it.
struct AlgoConfig {
  int32_t algoId = 0;
  uint32_t tile = 0;    // cublasLtMatmulTile_t
  uint32_t stages = 0;  // cublasLtMatmulStages_t
  int32_t splitK = 1;
  uint32_t reduction = 0;  // cublasLtReductionScheme_t (0 when unsplit)
  uint32_t swizzle = 0, customOption = 0;
  uint16_t innerShape = 0, clusterShape = 0;
  bool operator==(const AlgoConfig&) const = default;
};

// What a candidate's name says (see the names above).
struct LtCandidateName {
  int heuristicRank = -1;  // h<i>; -1 for an enumerated algorithm
  int32_t algoId = 0;      // a<id>.t<tile>.s<stages> (enumerated only)
  uint32_t tile = 0, stages = 0;
  int32_t splitK = 1;
  uint32_t reduction = 0;  // with splitK > 1: CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, _INPLACE or _OUTPUT_TYPE
  bool operator==(const LtCandidateName&) const = default;
};
std::string formatCandidateName(const LtCandidateName& name);
// nullopt for text that is no candidate name (e.g. a whole tactic id: pass only its suffix).
std::optional<LtCandidateName> parseCandidateName(const std::string& text);
// The name's split count, 1 where it has none or is no candidate name; for tests and reports.
int splitKOfTacticId(const std::string& tacticId);

// A validated configuration found by enumeration, before ranking.
struct EnumeratedAlgo {
  AlgoConfig config;
  double waves = 0;
};
// Which of `found` to keep, best first, at most `count`: the fullest last wave first
// (waves / ceil(waves), so a split that fills the GPU ranks above one that leaves it idle), at
// most `perAlgoId` of one algorithm id so the list spans several kernels; ties in a fixed order.
std::vector<size_t> rankEnumerated(const std::vector<EnumeratedAlgo>& found, size_t count, size_t perAlgoId = 2);

// ---- cuBLASLt ----

AlgoConfig readAlgoConfig(const cublasLtMatmulAlgo_t& algo);

struct LtCandidate {
  std::string name;  // formatCandidateName's, without the caller's base
  cublasLtMatmulAlgo_t algo{};
  uint64_t workspaceBytes = 0;  // what cuBLASLt asked for at this shape
};

struct LtSearch {
  int heuristicCount = 4;      // the heuristic's results taken (LayerInputs::candidateBudget)
  bool splitCopies = true;     // split-K copies of them (and stand-ins where they cannot split)
  size_t enumeratedCount = 0;  // enumerated algorithms added at most (0: none)
  uint64_t maxWorkspace = kCublasWorkspaceBytes;
  uint32_t alignment = 256;  // of every operand pointer
  int smCount = 0;           // estimates waves where cuBLASLt reports none (0: no estimate)

  // A LayerInputs::candidateBudget's search: that many heuristic results; split copies from the
  // default breadth up (the levels below time only the first one or two candidates); enumerated
  // algorithms, the budget's worth, above it (optimisation levels 4 and 5).
  static LtSearch forBudget(int candidateBudget);
};

// The candidates for `gemm`, in this order: the heuristic's (h<i>), the split-K copies of each
// (h<i>.k<s>), then enumerated ones not already listed. Where no heuristic result could be split
// but the output fills under kSplitKBelowWaves, up to two enumerated split-K algorithms are added
// even at the default breadth. Empty when cuBLASLt has no algorithm.
std::vector<LtCandidate> ltCandidates(LtGemm& gemm, cublasLtHandle_t handle, const LtSearch& search);

}  // namespace kiln::cuda
