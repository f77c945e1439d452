// TacticSelector against a fake backend whose streams keep a virtual clock: each step advances it
// by its tactic's cost, so the times the selector measures through the events are exact.
#include <kiln/error.h>

#include "backends/cpu/cpu_device.h"
#include "builder/tactic_selector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

using namespace kiln;

namespace {

class VirtualClockStream : public Stream {
 public:
  double now = 0;
  // Every stream's holds (a device stream's holdBack delays what follows; the clock only counts).
  static inline std::vector<double> holds;
  void copy(void* destination, const void* source, uint64_t bytes) override { std::memcpy(destination, source, bytes); }
  void wait(const Event&) override {}
  void synchronize() override {}
  void holdBack(double microseconds) override { holds.push_back(microseconds); }
  void* native() override { return nullptr; }
};

class VirtualClockEvent : public Event {
 public:
  void record(Stream& stream) override { at_ = dynamic_cast<VirtualClockStream&>(stream).now; }
  void synchronize() override {}
  double millisecondsSince(const Event& start) const override {
    return at_ - dynamic_cast<const VirtualClockEvent&>(start).at_;
  }

 private:
  double at_ = 0;
};

struct FakeTactic {
  Tactic tactic;
  double milliseconds;
  bool fails = false;  // instantiate throws, as for a tactic that cannot run the layer
  double channelsLastMilliseconds = -1;  // when asked to read NHWC (>= 0)
};

class FakeStep : public Step {
 public:
  FakeStep(Tactic tactic, double ms, int& runs) : tactic_(std::move(tactic)), ms_(ms), runs_(runs) {}
  const Tactic& tactic() const override { return tactic_; }
  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override {
    return tactic_.workspaceBytes;
  }
  void enqueue(const StepArgs& args, Stream& stream) const override {
    EXPECT_GE(args.workspaceBytes, tactic_.workspaceBytes);
    EXPECT_EQ(args.outputs.size(), 1u);  // bound, with the opt dims
    if (!args.outputs.empty()) EXPECT_EQ(args.outputs[0].dims, (std::vector<int64_t>{2, 4}));
    dynamic_cast<VirtualClockStream&>(stream).now += ms_;
    ++runs_;
  }

 private:
  Tactic tactic_;
  double ms_;
  int& runs_;
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::vector<FakeTactic> offered) : offered_(std::move(offered)) {}
  mutable std::map<std::string, int> runs;
  // Lists only the first LayerInputs::candidateBudget of its tactics, as a library heuristic's list.
  bool listsBudget = false;

  std::string name() const override { return "fake"; }
  BackendKind kind() const override { return BackendKind::kCpu; }
  DeviceInfo device() const override { return {"virtual clock", ""}; }
  SupportVerdict supports(const Layer&, Precision) const override { return {}; }
  std::vector<Tactic> tactics(const Layer&, Precision, const LayerInputs& in) const override {
    EXPECT_EQ(in.dims.at(0), (std::vector<int64_t>{8, 4}));  // asked at the max shapes
    std::vector<Tactic> out;
    for (const auto& t : offered_) out.push_back(t.tactic);
    if (listsBudget && out.size() > size_t(in.candidateBudget)) out.resize(size_t(in.candidateBudget));
    return out;
  }
  std::unique_ptr<Step> instantiate(const Layer& layer, const Tactic& tactic, const LayerSignature&) const override {
    for (const auto& t : offered_)
      if (t.tactic.id == tactic.id) {
        if (t.fails) throw Error(ErrorCode::kUnsupported, layer.describe() + ": not on this device");
        const bool nhwc = tactic.inputFormat(0) == TensorFormat::kNHWC && t.channelsLastMilliseconds >= 0;
        return std::make_unique<FakeStep>(tactic, nhwc ? t.channelsLastMilliseconds : t.milliseconds,
                                          runs[t.tactic.id]);
      }
    throw Error(ErrorCode::kInvalidArgument, "unknown tactic " + tactic.id);
  }
  DeviceAllocator& allocator() const override { return cpuAllocator(); }
  std::unique_ptr<Stream> createStream() const override { return std::make_unique<VirtualClockStream>(); }
  std::unique_ptr<Event> createEvent() const override { return std::make_unique<VirtualClockEvent>(); }

 private:
  std::vector<FakeTactic> offered_;
};

class TacticSelection : public ::testing::Test {
 protected:
  TacticSelection() {
    network_.addInput("x", DataType::kFloat32, Shape::fromDims({-1, 4}));
    Layer relu;
    relu.name = "act";
    relu.opType = "Relu";
    relu.inputs = {"x"};
    relu.outputs = {"y"};
    network_.addLayer(relu);
    network_.markOutput("y");
    network_.inferShapes();  // y is float32, like x
  }
  TacticChoice select(const Backend& backend, TimingCache& cache, uint64_t workspaceLimit = 1 << 20,
                      const std::vector<TensorFormat>& likelyInputFormats = {}, int level = 3,
                      const TimingListener& listener = {}) {
    TacticSelector selector(backend, cache, workspaceLimit, {}, TacticSearch::forLevel(level));
    selector.setListener(listener);
    return selector.select(network_, network_.layers()[0], Precision::kFP32, {{"x", {2, 4}}, {"y", {2, 4}}}, {{"x", {8, 4}}},
                likelyInputFormats);
  }
  Network network_;
};

const TacticCandidate& candidate(const TacticChoice& choice, const std::string& id) {
  for (const auto& c : choice.candidates)
    if (c.tactic == id) return c;
  throw std::runtime_error("no candidate " + id);
}

TEST_F(TacticSelection, TimesEveryCandidateThroughEventsAndPicksTheFastest) {
  FakeBackend backend({{{"fake.slow"}, 3.0}, {{"fake.fast", {}, {}, 4096}, 0.5}, {{"fake.middle"}, 1.25}});
  TimingCache cache;
  TacticChoice choice = select(backend, cache);
  EXPECT_EQ(choice.tactic, "fake.fast");
  EXPECT_TRUE(choice.timed);
  EXPECT_FALSE(choice.fromCache);
  EXPECT_DOUBLE_EQ(choice.milliseconds, 0.5);
  EXPECT_EQ(choice.workspaceBytes, 4096u);
  ASSERT_EQ(choice.candidates.size(), 3u);
  EXPECT_DOUBLE_EQ(candidate(choice, "fake.slow").milliseconds, 3.0);
  EXPECT_DOUBLE_EQ(candidate(choice, "fake.middle").milliseconds, 1.25);
  for (const auto& c : choice.candidates) {
    EXPECT_EQ(c.status, "timed");
    EXPECT_EQ(backend.runs[c.tactic], 9) << c.tactic;  // a warm-up, a probe and seven timed runs
  }
  EXPECT_EQ(cache.size(), 3u);
}

// A step shorter than a timed region (0.1 ms) is launched several times in each, back to back
// behind a hold on the stream, and its time is the region's over the launches: 0.02 ms five times a
// region, 0.01 ms ten times; each of the 14 regions held back first.
TEST_F(TacticSelection, ShortStepsAreTimedAsSeveralLaunchesBehindAHold) {
  FakeBackend backend({{{"fake.short"}, 0.02}, {{"fake.shorter"}, 0.01}});
  VirtualClockStream::holds.clear();
  TimingCache cache;
  const TacticChoice choice = select(backend, cache);
  EXPECT_EQ(choice.tactic, "fake.shorter");
  EXPECT_NEAR(candidate(choice, "fake.short").milliseconds, 0.02, 1e-12);
  EXPECT_NEAR(candidate(choice, "fake.shorter").milliseconds, 0.01, 1e-12);
  EXPECT_EQ(backend.runs["fake.short"], 2 + 7 * 5);
  EXPECT_EQ(backend.runs["fake.shorter"], 2 + 7 * 10);
  ASSERT_EQ(VirtualClockStream::holds.size(), 14u);
  for (double hold : VirtualClockStream::holds) {
    EXPECT_GE(hold, 20.0);    // the margin at least, in microseconds
    EXPECT_LE(hold, 5000.0);  // and never past the cap
  }
}

TEST_F(TacticSelection, SecondSelectionTakesTimesFromTheCacheWithoutRunning) {
  FakeBackend backend({{{"fake.a"}, 2.0}, {{"fake.b"}, 1.0}});
  TimingCache cache;
  select(backend, cache);
  backend.runs.clear();
  TacticChoice again = select(backend, cache);
  EXPECT_EQ(again.tactic, "fake.b");
  EXPECT_TRUE(again.fromCache);
  EXPECT_FALSE(again.timed);
  for (const auto& c : again.candidates) EXPECT_EQ(c.status, "cached");
  EXPECT_TRUE(backend.runs.empty());
}

TEST_F(TacticSelection, TacticsOverTheWorkspaceLimitAreSkippedAndSaySo) {
  FakeBackend backend({{{"fake.big", {}, {}, 2 << 20}, 0.1}, {{"fake.small", {}, {}, 1000}, 1.0}, {{"fake.none"}, 2.0}});
  TimingCache cache;
  TacticChoice choice = select(backend, cache, 1 << 20);
  EXPECT_EQ(choice.tactic, "fake.small");
  const TacticCandidate& big = candidate(choice, "fake.big");
  EXPECT_EQ(big.status.rfind("skipped: needs 2097152 bytes", 0), 0u) << big.status;
  EXPECT_LT(big.milliseconds, 0);
  EXPECT_EQ(backend.runs.count("fake.big"), 0u);
}

TEST_F(TacticSelection, EveryTacticOverTheLimitIsAnErrorNamingTheLayer) {
  FakeBackend backend({{{"fake.big", {}, {}, 5000}, 0.1}, {{"fake.bigger", {}, {}, 9000}, 0.1}});
  TimingCache cache;
  try {
    select(backend, cache, 4096);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'act'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--workspace"), std::string::npos) << e.what();
  }
}

TEST_F(TacticSelection, ALoneCandidateIsTakenWithoutTiming) {
  FakeBackend backend({{{"fake.only"}, 1.0}});
  TimingCache cache;
  TacticChoice choice = select(backend, cache);
  EXPECT_EQ(choice.tactic, "fake.only");
  EXPECT_FALSE(choice.timed);
  EXPECT_EQ(choice.candidates.at(0).status, "only candidate");
  EXPECT_TRUE(backend.runs.empty());
  EXPECT_EQ(cache.size(), 0u);
}

// A tactic the backend lists as unavailable (a kiln.Pointwise body NVRTC cannot take) is only
// reported, last, with the reason: never timed, never chosen, even when it comes first.
TEST_F(TacticSelection, UnavailableTacticsAreReportedNotTimed) {
  Tactic unavailable{"fake.generated"};
  unavailable.unavailable = "its body's Mod has no generated code";
  FakeBackend backend({{unavailable, 0.1}, {{"fake.a"}, 2.0}, {{"fake.b"}, 1.0}});
  TimingCache cache;
  TacticChoice choice = select(backend, cache);
  EXPECT_EQ(choice.tactic, "fake.b");
  ASSERT_EQ(choice.candidates.size(), 3u);
  EXPECT_EQ(choice.candidates.back().tactic, "fake.generated");
  EXPECT_EQ(choice.candidates.back().status, "unavailable: its body's Mod has no generated code");
  EXPECT_EQ(backend.runs.count("fake.generated"), 0u);

  FakeBackend alone({{unavailable, 0.1}});
  EXPECT_THROW(select(alone, cache), Error);
  TacticSelector selector(backend, cache, 1 << 20, {}, TacticSearch::forLevel(3));
  try {
    selector.select(network_, network_.layers()[0], Precision::kFP32, {{"x", {2, 4}}, {"y", {2, 4}}}, {{"x", {8, 4}}},
                    {}, "fake.generated");
    FAIL() << "forcing an unavailable tactic was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no generated code"), std::string::npos) << e.what();
  }
}

TEST_F(TacticSelection, ATacticThatFailsIsNoCandidate) {
  FakeBackend backend({{{"fake.broken"}, 0.1, true}, {{"fake.working"}, 4.0}});
  TimingCache cache;
  TacticChoice choice = select(backend, cache);
  EXPECT_EQ(choice.tactic, "fake.working");
  EXPECT_EQ(candidate(choice, "fake.broken").status.rfind("failed: ", 0), 0u);
}

// Five tactics, each faster than the one before: how far down the list the search goes shows in
// the choice.
std::vector<FakeTactic> slowestFirst(int count) {
  std::vector<FakeTactic> tactics;
  for (int i = 0; i < count; ++i) tactics.push_back({{"fake." + std::to_string(i)}, double(count - i)});
  return tactics;
}

size_t countStatus(const TacticChoice& choice, const std::string& status) {
  return size_t(std::count_if(choice.candidates.begin(), choice.candidates.end(),
                              [&](const TacticCandidate& c) { return c.status == status; }));
}

TEST_F(TacticSelection, OptimizationLevelsSetHowManyCandidatesAreTimed) {
  struct Expected {
    int level;
    size_t timed;
    std::string chosen;
  };
  for (const Expected& e : {Expected{0, 0, "fake.0"}, Expected{1, 0, "fake.0"}, Expected{2, 2, "fake.1"},
                            Expected{3, 5, "fake.4"}, Expected{4, 5, "fake.4"}, Expected{5, 5, "fake.4"}}) {
    SCOPED_TRACE("level " + std::to_string(e.level));
    FakeBackend backend(slowestFirst(5));
    TimingCache cache;
    const TacticChoice choice = select(backend, cache, 1 << 20, {}, e.level);
    EXPECT_EQ(choice.tactic, e.chosen);
    ASSERT_EQ(choice.candidates.size(), 5u);  // the report lists every candidate, timed or not
    EXPECT_EQ(countStatus(choice, "timed"), e.timed);
    EXPECT_EQ(backend.runs.size(), e.timed);
    EXPECT_EQ(cache.size(), e.timed);
    EXPECT_EQ(choice.timed, e.timed > 0);
    if (e.level <= 1) {
      EXPECT_EQ(choice.candidates[0].status, "first candidate (optimization level " + std::to_string(e.level) + ")");
      EXPECT_EQ(choice.candidates[1].status,
                "not timed: optimization level " + std::to_string(e.level) + " takes the first candidate");
    }
    if (e.level == 2) EXPECT_EQ(choice.candidates[4].status, "not timed: optimization level 2 times the first 2");
  }
}

TEST_F(TacticSelection, HigherLevelsAskBackendsWithGrowingListsForMoreCandidates) {
  const std::pair<int, size_t> listed[] = {{0, 1}, {1, 1}, {2, 2}, {3, 4}, {4, 8}, {5, 16}};
  for (const auto& [level, count] : listed) {
    SCOPED_TRACE("level " + std::to_string(level));
    FakeBackend backend(slowestFirst(20));
    backend.listsBudget = true;
    TimingCache cache;
    const TacticChoice choice = select(backend, cache, 1 << 20, {}, level);
    EXPECT_EQ(choice.candidates.size(), count);
    EXPECT_EQ(countStatus(choice, "timed"), count > 1 ? count : 0u);
    EXPECT_EQ(choice.tactic, "fake." + std::to_string(count - 1));  // the last listed is the fastest
  }
}

TEST_F(TacticSelection, TheListenerHearsEveryRunAndCanStopTheTiming) {
  FakeBackend backend(slowestFirst(3));
  TimingCache cache;
  std::map<std::string, int> heard;
  select(backend, cache, 1 << 20, {}, 3, [&](const std::string& tactic) { ++heard[tactic]; });
  // Each warm-up (with its probe run) and timed run, announced before it runs.
  for (const auto& [tactic, count] : backend.runs) EXPECT_EQ(heard[tactic], count - 1) << tactic;
  EXPECT_EQ(heard.size(), 3u);

  FakeBackend stopped(slowestFirst(3));
  TimingCache empty;
  int calls = 0;
  try {
    select(stopped, empty, 1 << 20, {}, 3, [&](const std::string&) {
      if (++calls == 5) throw Error(ErrorCode::kCancelled, "stop");
    });
    FAIL() << "the listener's error should end the selection";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled);
  }
  int runs = 0;
  for (const auto& [tactic, count] : stopped.runs) runs += count;
  EXPECT_EQ(runs, 7);  // three warm-ups and probes, one timed run: nothing after the listener stopped it
  EXPECT_EQ(empty.size(), 0u);
}

}  // namespace

// A tactic that takes channels-last activations wins a near tie (its neighbours may skip two
// re-layouts), but not a clear loss.
TEST_F(TacticSelection, NearTieGoesToTheChannelsLastTactic) {
  Tactic channelsLast{"fake.channels_last"};
  channelsLast.takesChannelsLast = true;
  for (auto [channelsLastMs, expected] : {std::pair{1.05, "fake.channels_last"}, std::pair{1.3, "fake.linear"},
                                          std::pair{0.8, "fake.channels_last"}}) {
    SCOPED_TRACE(channelsLastMs);
    FakeBackend backend({{{"fake.linear"}, 1.0}, {channelsLast, channelsLastMs}});
    TimingCache cache;
    EXPECT_EQ(select(backend, cache).tactic, expected);
  }
}

// Inside a channels-last chain a tactic that takes it is timed reading NHWC (as it will run there):
// it wins there, loses where its input comes linear, and the two timings are cached apart.
TEST_F(TacticSelection, ChannelsLastTacticsAreTimedTheWayTheyRunInAChain) {
  Tactic channelsLast{"fake.channels_last"};
  channelsLast.takesChannelsLast = true;
  FakeBackend backend({{{"fake.linear"}, 1.0}, {channelsLast, 2.0, false, 0.5}});
  TimingCache cache;
  EXPECT_EQ(select(backend, cache).tactic, "fake.linear");
  const TacticChoice chained = select(backend, cache, 1 << 20, {TensorFormat::kNHWC});
  EXPECT_EQ(chained.tactic, "fake.channels_last");
  EXPECT_TRUE(chained.takesChannelsLast);
  EXPECT_TRUE(chained.timed);  // not the linear timing from the cache
  EXPECT_NEAR(candidate(chained, "fake.channels_last").milliseconds, 0.5, 1e-9);
  EXPECT_TRUE(select(backend, cache, 1 << 20, {TensorFormat::kNHWC}).fromCache);
}
