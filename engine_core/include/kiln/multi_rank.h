#pragma once
// Running the plans of a model split over ranks (tensor parallelism: `kiln build --tensor-parallel
// N` writes one plan a rank). Each rank runs its own engine on its own thread with its member of a
// communicator group made for the plans' backend (createCommunicators); every rank reads the same
// inputs and, after the last AllReduce, holds the same outputs.
#include <kiln/communicator.h>
#include <kiln/performance.h>
#include <kiln/runtime.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

using RankEngines = std::vector<std::shared_ptr<const Engine>>;

// Throws kiln::Error(kInvalidArgument) naming the first engine (by `names`, e.g. its file) that is
// not rank i of engines.size() ranks (PlanInfo::rank, worldSize), or whose backend, inputs or
// outputs differ from rank 0's.
void checkRankEngines(const RankEngines& engines, const std::vector<std::string>& names);

// Runs every rank once on `inputs`; returns each rank's outputs. A rank that fails aborts the group
// (the others stop at their next collective), and the first failure by rank is rethrown.
std::vector<std::map<std::string, HostTensor>> runRanks(const RankEngines& engines,
                                                        const std::map<std::string, HostTensor>& inputs,
                                                        std::chrono::milliseconds timeout = std::chrono::seconds(60));

struct RankPerformanceReport {
  PlanInfo plan;  // rank 0's
  std::string inputShapes;
  int ranks = 0;
  int64_t steps = 0;  // timed steps; each runs every rank once
  double wallSeconds = 0;
  double throughput = 0;              // steps per second
  LatencyStats latency;               // a step: from the first rank's start to the last rank's end
  std::vector<LatencyStats> perRank;  // each rank's own runs
};

// Times the ranks in lock step (every rank runs each step; rank 0 decides when to stop and
// broadcasts it): warm-up for options.warmupMs, then at least options.iterations steps and
// options.durationSeconds. One stream a rank, no CUDA graphs, no per-layer times: other options
// are refused naming them.
RankPerformanceReport measureRankPerformance(const RankEngines& engines,
                                             const std::map<std::string, HostTensor>& inputs,
                                             const PerformanceOptions& options);

}  // namespace kiln
