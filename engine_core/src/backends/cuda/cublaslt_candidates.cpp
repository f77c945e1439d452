#include "cublaslt_candidates.h"

#include "../backend.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace kiln::cuda {

// ---- Pure logic ----

std::vector<int> splitKCounts(double waves, int64_t k, int maxCounts) {
  std::vector<int> counts;
  if (!(waves > 0) || waves >= kSplitKBelowWaves || maxCounts <= 0) return counts;
  for (int s = 2; s <= kSplitKMaxCount; s *= 2)
    if (waves * s <= kSplitKMaxWaves && k / s >= kSplitKMinDepth) counts.push_back(s);
  if (counts.size() > size_t(maxCounts)) counts.erase(counts.begin(), counts.end() - maxCounts);
  return counts;
}

namespace {

const char* reductionLetter(uint32_t reduction) {
  switch (reduction) {
    case CUBLASLT_REDUCTION_SCHEME_INPLACE:
      return "i";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE:
      return "o";
    default:
      return "";  // in the compute type, the default a split names
  }
}

// Reads decimal digits at text[pos...], advancing pos; nullopt when there are none.
std::optional<int64_t> readNumber(const std::string& text, size_t& pos) {
  const size_t start = pos;
  int64_t value = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && pos - start < 9)
    value = value * 10 + (text[pos++] - '0');
  if (pos == start || (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')) return std::nullopt;
  return value;
}

// Reads "<prefix><number>" at pos (and the '.' before it unless it starts the text).
std::optional<int64_t> readField(const std::string& text, size_t& pos, const char* prefix) {
  const std::string p = std::string(pos == 0 ? "" : ".") + prefix;
  if (text.compare(pos, p.size(), p) != 0) return std::nullopt;
  pos += p.size();
  return readNumber(text, pos);
}

}  // namespace

std::string formatCandidateName(const LtCandidateName& name) {
  std::string text;
  if (name.heuristicRank >= 0) {
    text = "h" + std::to_string(name.heuristicRank);
    if (name.splitK <= 1) return text;
  } else {
    text = "a" + std::to_string(name.algoId) + ".t" + std::to_string(name.tile) + ".s" + std::to_string(name.stages);
  }
  return text + ".k" + std::to_string(std::max(name.splitK, 1)) +
         (name.splitK > 1 ? reductionLetter(name.reduction) : "");
}

std::optional<LtCandidateName> parseCandidateName(const std::string& text) {
  LtCandidateName name;
  size_t pos = 0;
  bool needsSplit = false;
  if (auto rank = readField(text, pos, "h")) {
    name.heuristicRank = int(*rank);
    if (pos == text.size()) return name;
  } else {
    pos = 0;
    auto id = readField(text, pos, "a");
    auto tile = id ? readField(text, pos, "t") : std::nullopt;
    auto stages = tile ? readField(text, pos, "s") : std::nullopt;
    if (!stages) return std::nullopt;
    name.algoId = int32_t(*id), name.tile = uint32_t(*tile), name.stages = uint32_t(*stages);
    needsSplit = true;
  }
  auto split = readField(text, pos, "k");
  if (!split || *split < 1 || (*split == 1 && !needsSplit)) return std::nullopt;
  name.splitK = int32_t(*split);
  if (name.splitK > 1) {
    name.reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (pos + 1 == text.size() && (text[pos] == 'i' || text[pos] == 'o'))
      name.reduction = text[pos++] == 'i' ? CUBLASLT_REDUCTION_SCHEME_INPLACE : CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
  }
  if (pos != text.size()) return std::nullopt;
  return name;
}

int splitKOfTacticId(const std::string& tacticId) {
  // The name is the id's tail after its base: try each '.'-separated start from the right.
  for (size_t dot = tacticId.rfind('.'); dot != std::string::npos && dot > 0; dot = tacticId.rfind('.', dot - 1))
    if (auto name = parseCandidateName(tacticId.substr(dot + 1))) return name->splitK;
  return 1;
}

std::vector<size_t> rankEnumerated(const std::vector<EnumeratedAlgo>& found, size_t count, size_t perAlgoId) {
  auto fill = [](double waves) { return waves > 0 ? waves / std::ceil(waves) : 0.0; };
  std::vector<size_t> order(found.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const AlgoConfig &a = found[x].config, &b = found[y].config;
    const double fa = fill(found[x].waves), fb = fill(found[y].waves);
    if (fa != fb) return fa > fb;
    return std::tie(a.splitK, a.algoId, a.tile, a.stages, a.reduction) <
           std::tie(b.splitK, b.algoId, b.tile, b.stages, b.reduction);
  });
  std::vector<size_t> kept;
  std::vector<std::pair<int32_t, size_t>> perId;  // algorithm id, how many kept
  for (size_t i : order) {
    if (kept.size() >= count) break;
    const int32_t id = found[i].config.algoId;
    auto it = std::find_if(perId.begin(), perId.end(), [&](const auto& p) { return p.first == id; });
    if (it == perId.end()) it = perId.insert(perId.end(), {id, 0});
    if (it->second >= perAlgoId) continue;
    ++it->second;
    kept.push_back(i);
  }
  return kept;
}

LtSearch LtSearch::forBudget(int candidateBudget) {
  LtSearch search;
  search.heuristicCount = std::max(candidateBudget, 1);
  search.splitCopies = candidateBudget >= kDefaultCandidateBudget;
  search.enumeratedCount = candidateBudget > kDefaultCandidateBudget ? size_t(candidateBudget) : 0;
  return search;
}

// ---- cuBLASLt ----

namespace {

// Enumeration stops after this many AlgoCheck calls (each some microseconds on the host).
constexpr int kMaxEnumerationChecks = 4000;
constexpr int kMaxAlgoIds = 256;
// The reduction schemes a split tries, in order: fp32 partials first (a split fp16 product keeps
// the unsplit one's accuracy), in place in the output next (no second kernel).
constexpr uint32_t kReductionOrder[] = {CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, CUBLASLT_REDUCTION_SCHEME_INPLACE,
                                        CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};

template <typename T>
void getConfig(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute, T& out) {
  size_t written = 0;
  T value{};
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof(value), &written) ==
          CUBLAS_STATUS_SUCCESS &&
      written == sizeof(value))
    out = value;
}

template <typename T>
bool setConfig(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute, T value) {
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, attribute, &value, sizeof(value)) == CUBLAS_STATUS_SUCCESS;
}

template <typename T>
T capability(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attribute) {
  T value{};
  size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attribute, &value, sizeof(value), &written) != CUBLAS_STATUS_SUCCESS)
    return T{};
  return value;
}

// An array capability (tile or stages ids); `fallback` alone where the algorithm lists none.
std::vector<uint32_t> capabilityList(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attribute,
                                     uint32_t fallback) {
  size_t bytes = 0;
  std::vector<uint32_t> values;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attribute, nullptr, 0, &bytes) == CUBLAS_STATUS_SUCCESS &&
      bytes >= sizeof(uint32_t)) {
    values.resize(bytes / sizeof(uint32_t));
    size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, attribute, values.data(), values.size() * sizeof(uint32_t),
                                          &written) != CUBLAS_STATUS_SUCCESS)
      values.clear();
    values.resize(std::min(values.size(), written / sizeof(uint32_t)));
  }
  if (values.empty()) values.push_back(fallback);
  return values;
}

// The algorithm takes operands aligned to `alignment` bytes (AlgoCheck sees no pointers; the
// heuristic was told the alignment, enumerated algorithms were not).
bool takesAlignment(const cublasLtMatmulAlgo_t& algo, uint32_t alignment) {
  for (auto attribute : {CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES})
    if (capability<uint32_t>(algo, attribute) > alignment) return false;
  return true;
}

// Two configurations run the same kernel the same way (names only tell these apart).
bool sameKernel(const AlgoConfig& a, const AlgoConfig& b) {
  return a.algoId == b.algoId && a.tile == b.tile && a.stages == b.stages &&
         std::max(a.splitK, 1) == std::max(b.splitK, 1) && (a.splitK <= 1 || a.reduction == b.reduction);
}

class CandidateFinder {
 public:
  CandidateFinder(LtGemm& gemm, cublasLtHandle_t handle, const LtSearch& search)
      : gemm_(gemm), handle_(handle), search_(search) {}

  std::vector<LtCandidate> find() {
    const auto results =
        gemm_.heuristics(handle_, std::max(search_.heuristicCount, 1), search_.maxWorkspace, search_.alignment);
    for (size_t i = 0; i < results.size(); ++i)
      add(LtCandidateName{.heuristicRank = int(i)}, results[i].algo, results[i].workspaceSize);
    bool split = false;
    double unsplitWaves = 0;
    for (size_t i = 0; i < results.size() && search_.splitCopies; ++i) {
      const AlgoConfig config = readAlgoConfig(results[i].algo);
      const double waves = unsplit(results[i].wavesCount, config.splitK);
      if (i == 0) unsplitWaves = waves;
      if (!capability<int32_t>(results[i].algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT)) continue;
      for (int s : splitKCounts(waves, gemm_.shape().k)) {
        if (s == config.splitK) continue;  // the heuristic's own choice, listed as h<i>
        split |= addSplit(LtCandidateName{.heuristicRank = int(i)}, results[i].algo, s);
      }
    }
    if (!results.empty()) {
      if (search_.enumeratedCount > 0)
        enumerate(search_.enumeratedCount, false);
      else if (search_.splitCopies && !split && unsplitWaves > 0 && unsplitWaves < kSplitKBelowWaves)
        enumerate(2, true);  // a small output the heuristic's kernels cannot split: others can
    }
    return std::move(candidates_);
  }

 private:
  // The waves of the unsplit launch, from cuBLASLt's count for a launch split `splitK` ways, or
  // estimated from 128x128 tiles where cuBLASLt reports none.
  double unsplit(float wavesCount, int32_t splitK) const {
    if (wavesCount > 0) return double(wavesCount) / std::max(splitK, 1);
    if (search_.smCount <= 0) return 0;
    const GemmShape& s = gemm_.shape();
    const int64_t tiles = ((s.m + 127) / 128) * ((s.n + 127) / 128) * std::max<int64_t>(s.batch, 1);
    return double(tiles) / search_.smCount;
  }

  bool listed(const AlgoConfig& config) const {
    return std::any_of(configs_.begin(), configs_.end(), [&](const AlgoConfig& c) { return sameKernel(c, config); });
  }

  void add(const LtCandidateName& name, const cublasLtMatmulAlgo_t& algo, uint64_t workspaceBytes) {
    candidates_.push_back(LtCandidate{formatCandidateName(name), algo, workspaceBytes});
    configs_.push_back(readAlgoConfig(algo));
  }

  std::optional<cublasLtMatmulHeuristicResult_t> check(const cublasLtMatmulAlgo_t& algo) {
    ++checks_;
    return gemm_.checkAlgo(handle_, algo);
  }

  struct Checked {
    cublasLtMatmulAlgo_t algo;
    cublasLtMatmulHeuristicResult_t result;
  };
  // `base` split `splitK` ways with the first reduction scheme it supports that AlgoCheck accepts
  // for this product (its epilogue included) within the workspace; nullopt when none is.
  std::optional<Checked> split(const cublasLtMatmulAlgo_t& base, int splitK) {
    const uint32_t schemes = capability<uint32_t>(base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
    for (uint32_t scheme : kReductionOrder) {
      if (!(schemes & scheme)) continue;
      cublasLtMatmulAlgo_t algo = base;
      if (!setConfig(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, int32_t(splitK)) ||
          !setConfig(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, scheme))
        continue;
      if (!takesAlignment(algo, search_.alignment)) continue;
      if (const auto result = check(algo); result && result->workspaceSize <= search_.maxWorkspace)
        return Checked{algo, *result};
    }
    return std::nullopt;
  }

  // A heuristic result split `splitK` ways, named after it; false when no split is accepted or it
  // is listed already.
  bool addSplit(LtCandidateName name, const cublasLtMatmulAlgo_t& base, int splitK) {
    const auto checked = split(base, splitK);
    if (!checked) return false;
    const AlgoConfig config = readAlgoConfig(checked->algo);
    if (listed(config)) return false;
    name.splitK = splitK, name.reduction = config.reduction;
    add(name, checked->algo, checked->result.workspaceSize);
    return true;
  }

  struct Found {
    cublasLtMatmulAlgo_t algo;
    uint64_t workspaceBytes;
  };

  void consider(const cublasLtMatmulAlgo_t& algo, const cublasLtMatmulHeuristicResult_t& result,
                std::vector<EnumeratedAlgo>& found, std::vector<Found>& algos) {
    const AlgoConfig config = readAlgoConfig(algo);
    if (result.workspaceSize > search_.maxWorkspace || listed(config)) return;
    found.push_back(EnumeratedAlgo{config, double(result.wavesCount)});
    algos.push_back(Found{algo, result.workspaceSize});
  }

  // Every algorithm id over its tiles, each at the first stages id AlgoCheck accepts, unsplit
  // (unless splitOnly) and split as splitKCounts says; the best `count` by rankEnumerated.
  void enumerate(size_t count, bool splitOnly) {
    const GemmShape& s = gemm_.shape();
    std::vector<int> ids(kMaxAlgoIds);
    int returned = 0;
    if (cublasLtMatmulAlgoGetIds(handle_, s.compute, s.scaleType(), s.abType, s.abType, s.cdType, s.cdType, kMaxAlgoIds,
                                 ids.data(), &returned) != CUBLAS_STATUS_SUCCESS)
      return;
    ids.resize(size_t(std::clamp(returned, 0, kMaxAlgoIds)));
    std::vector<EnumeratedAlgo> found;
    std::vector<Found> algos;
    for (int id : ids) {
      cublasLtMatmulAlgo_t base{};
      if (cublasLtMatmulAlgoInit(handle_, s.compute, s.scaleType(), s.abType, s.abType, s.cdType, s.cdType, id,
                                 &base) != CUBLAS_STATUS_SUCCESS)
        continue;
      const bool splits = capability<int32_t>(base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0;
      if (splitOnly && !splits) continue;
      const auto stagesIds = capabilityList(base, CUBLASLT_ALGO_CAP_STAGES_IDS, CUBLASLT_MATMUL_STAGES_UNDEFINED);
      for (uint32_t tile : capabilityList(base, CUBLASLT_ALGO_CAP_TILE_IDS, CUBLASLT_MATMUL_TILE_UNDEFINED))
        for (uint32_t stages : stagesIds) {
          if (checks_ > kMaxEnumerationChecks) return keep(found, algos, count);
          cublasLtMatmulAlgo_t algo = base;
          if (!setConfig(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, tile) ||
              !setConfig(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, stages) || !takesAlignment(algo, search_.alignment))
            continue;
          const auto result = check(algo);
          if (!result) continue;
          if (!splitOnly) consider(algo, *result, found, algos);
          if (splits)
            for (int k : splitKCounts(unsplit(result->wavesCount, 1), s.k))
              if (const auto checked = split(algo, k)) consider(checked->algo, checked->result, found, algos);
          break;  // this tile's first accepted stages id
        }
    }
    keep(found, algos, count);
  }

  void keep(const std::vector<EnumeratedAlgo>& found, const std::vector<Found>& algos, size_t count) {
    for (size_t i : rankEnumerated(found, count)) {
      const AlgoConfig& c = found[i].config;
      add(LtCandidateName{.algoId = c.algoId,
                          .tile = c.tile,
                          .stages = c.stages,
                          .splitK = std::max(c.splitK, 1),
                          .reduction = c.splitK > 1 ? c.reduction : 0},
          algos[i].algo, algos[i].workspaceBytes);
    }
  }

  LtGemm& gemm_;
  cublasLtHandle_t handle_;
  LtSearch search_;
  std::vector<LtCandidate> candidates_;
  std::vector<AlgoConfig> configs_;  // of candidates_, for deduplication
  int checks_ = 0;                   // AlgoCheck calls so far
};

}  // namespace

AlgoConfig readAlgoConfig(const cublasLtMatmulAlgo_t& algo) {
  AlgoConfig c;
  getConfig(algo, CUBLASLT_ALGO_CONFIG_ID, c.algoId);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, c.tile);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, c.stages);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, c.splitK);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, c.reduction);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, c.swizzle);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, c.customOption);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, c.innerShape);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, c.clusterShape);
  return c;
}

std::vector<LtCandidate> ltCandidates(LtGemm& gemm, cublasLtHandle_t handle, const LtSearch& search) {
  return CandidateFinder(gemm, handle, search).find();
}

}  // namespace kiln::cuda
