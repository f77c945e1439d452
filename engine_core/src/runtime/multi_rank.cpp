// The ranks of a split model as threads of this process (kiln/multi_rank.h).
#include <kiln/error.h>
#include <kiln/multi_rank.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <thread>

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

// Runs work(rank, its communicator) on one thread a rank. A rank that throws aborts the group, so
// the others fail at their next collective instead of waiting; the first failure by rank is rethrown.
void onRankThreads(const RankEngines& engines, std::chrono::milliseconds timeout,
                   const std::function<void(int, const std::shared_ptr<Communicator>&)>& work) {
  const auto communicators = createCommunicators(engines[0]->planInfo().backend, int(engines.size()), timeout);
  std::vector<std::exception_ptr> errors(engines.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < engines.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        work(int(r), communicators[r]);
      } catch (const std::exception& e) {
        errors[r] = std::current_exception();
        communicators[r]->abort(e.what());
      } catch (...) {
        errors[r] = std::current_exception();
        communicators[r]->abort("an unknown error");
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::unique_ptr<ExecutionContext> rankContext(const Engine& engine, const std::shared_ptr<Communicator>& communicator) {
  auto context = engine.createExecutionContext();
  context->setCommunicator(communicator);
  return context;
}

double msBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

void checkRankEngines(const RankEngines& engines, const std::vector<std::string>& names) {
  const int n = int(engines.size());
  if (n == 0) throw Error(ErrorCode::kInvalidArgument, "no engines were given to run as ranks");
  auto nameOf = [&](int r) {
    return size_t(r) < names.size() ? "'" + names[size_t(r)] + "'" : "the engine of rank " + std::to_string(r);
  };
  const PlanInfo& first = engines[0]->planInfo();
  const auto firstIo = engines[0]->ioTensors();
  for (int r = 0; r < n; ++r) {
    const PlanInfo& info = engines[size_t(r)]->planInfo();
    if (info.worldSize != n)
      throw Error(ErrorCode::kInvalidArgument,
                  nameOf(r) + " is " +
                      (info.worldSize == 1 ? std::string("a whole model, not one rank of a split")
                                           : "rank " + std::to_string(info.rank) + " of a " +
                                                 std::to_string(info.worldSize) + "-rank split") +
                      ", but " + std::to_string(n) + " ranks were asked for");
    if (info.rank != r)
      throw Error(ErrorCode::kInvalidArgument,
                  nameOf(r) + " holds rank " + std::to_string(info.rank) + ", not rank " + std::to_string(r));
    if (info.backend != first.backend)
      throw Error(ErrorCode::kInvalidArgument,
                  nameOf(r) + " was built for the " + info.backend + " backend, rank 0 for " + first.backend);
    const auto io = engines[size_t(r)]->ioTensors();
    const bool same =
        io.size() == firstIo.size() && std::equal(io.begin(), io.end(), firstIo.begin(), [](auto& a, auto& b) {
          return a.name == b.name && a.isInput == b.isInput && a.dtype == b.dtype;
        });
    if (!same)
      throw Error(ErrorCode::kInvalidArgument,
                  nameOf(r) + " has other inputs or outputs than rank 0's: the plans are not ranks of one model");
  }
}

std::vector<std::map<std::string, HostTensor>> runRanks(const RankEngines& engines,
                                                        const std::map<std::string, HostTensor>& inputs,
                                                        std::chrono::milliseconds timeout) {
  checkRankEngines(engines, {});
  std::vector<std::map<std::string, HostTensor>> outputs(engines.size());
  onRankThreads(engines, timeout, [&](int rank, const std::shared_ptr<Communicator>& communicator) {
    outputs[size_t(rank)] = rankContext(*engines[size_t(rank)], communicator)->run(inputs);
  });
  return outputs;
}

RankPerformanceReport measureRankPerformance(const RankEngines& engines,
                                             const std::map<std::string, HostTensor>& inputs,
                                             const PerformanceOptions& options) {
  if (options.iterations < 1) throw Error(ErrorCode::kInvalidArgument, "--iterations must be at least 1");
  if (options.durationSeconds < 0 || options.warmupMs < 0)
    throw Error(ErrorCode::kInvalidArgument, "--duration and --warmup cannot be negative");
  if (options.streams != 1 || options.cudaGraph)
    throw Error(ErrorCode::kInvalidArgument,
                "ranks are timed on one stream each, without CUDA graphs: leave out "
                "--streams and --cuda-graph");
  checkRankEngines(engines, {});
  const size_t ranks = engines.size();
  std::vector<std::vector<Clock::time_point>> starts(ranks), ends(ranks);
  onRankThreads(engines, std::chrono::seconds(60), [&](int rank, const std::shared_ptr<Communicator>& communicator) {
    auto context = rankContext(*engines[size_t(rank)], communicator);
    // Every rank runs every step: rank 0 decides whether another follows and tells the others.
    auto anotherStep = [&](bool wanted) {
      int32_t flag = wanted;
      communicator->broadcast(&flag, &flag, 1, DataType::kInt32, 0);
      return flag != 0;
    };
    const auto warmup = Clock::now();
    int runs = 0;
    do {
      context->run(inputs);
    } while (anotherStep(++runs < 2 || msBetween(warmup, Clock::now()) < options.warmupMs));
    const auto timed = Clock::now();
    runs = 0;
    do {
      starts[size_t(rank)].push_back(Clock::now());
      context->run(inputs);
      ends[size_t(rank)].push_back(Clock::now());
    } while (
        anotherStep(++runs < options.iterations || msBetween(timed, Clock::now()) < options.durationSeconds * 1000));
  });

  RankPerformanceReport report;
  report.plan = engines[0]->planInfo();
  report.ranks = int(ranks);
  report.steps = int64_t(starts[0].size());
  std::vector<double> steps;
  for (size_t i = 0; i < starts[0].size(); ++i) {
    Clock::time_point first = starts[0][i], last = ends[0][i];
    for (size_t r = 1; r < ranks; ++r) {
      first = std::min(first, starts[r][i]);
      last = std::max(last, ends[r][i]);
    }
    steps.push_back(msBetween(first, last));
  }
  for (size_t r = 0; r < ranks; ++r) {
    std::vector<double> own;
    for (size_t i = 0; i < starts[r].size(); ++i) own.push_back(msBetween(starts[r][i], ends[r][i]));
    report.perRank.push_back(latencyStats(own));
  }
  Clock::time_point begin = starts[0].front(), end = ends[0].back();
  for (size_t r = 1; r < ranks; ++r) {
    begin = std::min(begin, starts[r].front());
    end = std::max(end, ends[r].back());
  }
  report.wallSeconds = msBetween(begin, end) / 1000;
  report.throughput = report.wallSeconds > 0 ? double(report.steps) / report.wallSeconds : 0;
  report.latency = latencyStats(steps);
  for (const auto& [name, t] : inputs)
    report.inputShapes += (report.inputShapes.empty() ? "" : ",") + name + ":" + dimsToString(t.dims());
  return report;
}

}  // namespace kiln
