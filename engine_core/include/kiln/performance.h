#pragma once
// Measuring an engine the way trtexec does: throughput and latency percentiles over a timed
// period, host-to-device copy, compute and device-to-host copy timed apart with the backend's
// events, several streams (each its own execution context on its own thread), then per-layer
// times from a separate profiled pass (timing each layer waits for it, which would distort the
// end-to-end numbers).
#include <kiln/profile_report.h>
#include <kiln/runtime.h>

#include <map>
#include <string>
#include <vector>

namespace kiln {

struct PerformanceOptions {
  double warmupMs = 200;          // untimed runs first, for at least this long
  int iterations = 10;            // timed runs per stream, at least
  double durationSeconds = 3;     // and for at least this long
  bool dataTransfers = true;      // copy inputs in and outputs out each run (false: compute only)
  int streams = 1;                // contexts running at once, each on its own stream and thread
  int layerProfileRuns = 20;      // profiled runs for per-layer times (0: none)
  bool cudaGraph = false;         // replay each context's launches as a CUDA graph
};

// Milliseconds over the timed runs.
struct LatencyStats {
  double min = 0, mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};

struct PerformanceReport {
  PlanInfo plan;
  std::string inputShapes;  // "x:1x3x224x224,..."
  int streams = 1;
  bool dataTransfers = true;
  bool cudaGraph = false;
  int64_t runs = 0;         // timed runs over every stream
  double wallSeconds = 0;   // of the timed period
  double throughput = 0;    // runs per second over every stream
  LatencyStats latency;     // one run end to end: copies in, compute, copies out
  LatencyStats hostToDevice, compute, deviceToHost;
  ProfileReport layers;     // per-layer medians from the profiled pass

  std::string toJson(int indent = 2) const;  // "kiln-profile-1" with a "performance" section
};

// Throws kiln::Error for bad options (no iterations, no streams) naming the option.
PerformanceReport measurePerformance(const Engine& engine, const std::map<std::string, HostTensor>& inputs,
                                     const PerformanceOptions& options);

LatencyStats latencyStats(std::vector<double> milliseconds);

}  // namespace kiln
