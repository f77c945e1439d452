#pragma once
// Picks each layer's tactic. Candidates needing more workspace than the limit are skipped, those
// past the optimisation level's breadth (TacticSearch) are not timed; a lone candidate is taken as
// is; otherwise each is timed on the backend's stream with its events (random inputs at the
// optimisation profile's opt shapes, a warm-up run, then the median of runs taken in rounds over all
// candidates), or its time is taken from the timing cache, and the fastest wins.
#include <kiln/build_report.h>

#include "../backends/backend.h"
#include "timing_cache.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct TacticChoice {
  std::string tactic;
  bool timed = false;       // some candidate was measured now
  bool fromCache = false;   // every time came from the timing cache
  double milliseconds = 0;  // of the chosen tactic, when known
  uint64_t workspaceBytes = 0;
  bool takesChannelsLast = false;  // the chosen tactic's Tactic::takesChannelsLast
  std::vector<uint8_t> payload;    // the chosen tactic's Tactic::payload
  std::vector<TacticCandidate> candidates;
};

// How widely tactics are searched at an optimisation level (TensorRT's builderOptimizationLevel):
//   0, 1  the backend's first usable candidate, untimed (level 0 also runs no graph passes);
//   2     the first two candidates timed;
//   3     every candidate the backend lists at its default breadth (kDefaultCandidateBudget);
//   4, 5  every candidate, backends with growing lists asked for two and four times as many.
struct TacticSearch {
  int candidateBudget = kDefaultCandidateBudget;  // LayerInputs::candidateBudget
  size_t maxCandidates = SIZE_MAX;                // usable candidates considered, in the backend's order
  int level = 3;                                  // for the report's "not timed: ..." statuses
  static TacticSearch forLevel(int optimizationLevel);
};

// Told the tactic about to run (before each candidate's warm-up and each timed run) while the
// selector times; it may throw (a cancelled build) to stop the selection.
using TimingListener = std::function<void(const std::string& tactic)>;

// Concrete dims of tensors by name.
using TensorShapes = std::map<std::string, std::vector<int64_t>>;

// What a backend's tactics() learns of a layer's inputs at these shapes.
LayerInputs describeInputs(const Network& network, const Layer& layer, const TensorShapes& shapes);

class TacticSelector {
 public:
  // `disabledSources`: tactic id prefixes ("cudnn", "cublaslt") whose tactics are never chosen.
  TacticSelector(const Backend& backend, TimingCache& cache, uint64_t workspaceLimit,
                 std::vector<std::string> disabledSources = {}, TacticSearch search = {})
      : backend_(backend),
        cache_(cache),
        workspaceLimit_(workspaceLimit),
        disabledSources_(std::move(disabledSources)),
        search_(search) {}
  void setListener(TimingListener listener) { listener_ = std::move(listener); }
  // Time a layer's only candidate too (a choice between precisions needs its time, not a choice
  // between tactics); by default a lone candidate is taken untimed.
  void setTimeOneCandidate(bool on) { timeOneCandidate_ = on; }
  // `optShapes` are timed; the workspace must cover `maxShapes`. Throws kInvalidArgument naming the
  // layer when every candidate needs more workspace than the limit. `likelyInputFormats` (per input;
  // empty: all linear) are the layouts the layer's producers will probably hand it: tactics that take
  // channels-last are timed reading those and writing channels-last, as they would run in a chain.
  // `forced`: take that tactic without timing.
  TacticChoice select(const Network& network, const Layer& layer, Precision precision, const TensorShapes& optShapes,
                      const TensorShapes& maxShapes, const std::vector<TensorFormat>& likelyInputFormats = {},
                      const std::string& forced = "");

 private:
  // select() among the usable candidates (those a backend listed as unavailable set aside).
  TacticChoice chooseAmong(const Network& network, const Layer& layer, Precision precision,
                           const TensorShapes& optShapes, std::vector<Tactic>& candidates,
                           const std::vector<TensorFormat>& likelyInputFormats, const std::string& forced);
  struct TimedRun;
  struct Tensors;
  // Random activations and output buffers in the backend's memory, and views of the weights;
  // nothing when a tensor cannot be made up (`why` says why).
  std::optional<Tensors> makeTensors(const Network& network, const Layer& layer, Precision precision,
                                     const TensorShapes& optShapes, Stream& stream, std::string& why) const;
  // Instantiates the tactic with its buffers and runs it once (warm-up).
  std::unique_ptr<TimedRun> prepare(const Network& network, const Layer& layer, const Tactic& tactic,
                                    const Tensors& tensors, Stream& stream) const;
  // Fills each entry's time and status ("timed", "failed: ...", "not timed: ...").
  void timeCandidates(const Network& network, const Layer& layer, Precision precision, const TensorShapes& optShapes,
                      const std::vector<const Tactic*>& tactics, std::vector<TacticCandidate*> entries);
  std::string signature(const Network& network, const Layer& layer, Precision precision,
                        const TensorShapes& optShapes) const;

  const Backend& backend_;
  TimingCache& cache_;
  uint64_t workspaceLimit_;
  std::vector<std::string> disabledSources_;
  TacticSearch search_;
  TimingListener listener_;
  bool timeOneCandidate_ = false;
};

}  // namespace kiln
