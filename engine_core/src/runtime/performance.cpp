#include <kiln/error.h>
#include <kiln/performance.h>

#include "../plan/engine_plan.h"
#include "engine_program.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

using nlohmann::json;

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

// One stream's share: its context, stream and events, the inputs and outputs in the engine's memory
// and the host copies they come from and go to.
struct Lane {
  std::unique_ptr<ExecutionContext> context;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> start, inputsIn, computed, outputsOut;
  std::vector<DeviceBuffer> memory;
  std::vector<std::pair<void*, const HostTensor*>> copiesIn;  // engine memory <- host tensor
  std::vector<std::pair<HostTensor, const void*>> copiesOut;  // host tensor <- engine memory
  std::vector<double> latency, hostToDevice, compute, deviceToHost;

  // One run: copies in, compute, copies out, timed by the backend's events; returns when done.
  void runOnce(bool transfers, bool timed) {
    start->record(*stream);
    if (transfers)
      for (auto& [to, from] : copiesIn) stream->copy(to, from->rawData(), from->byteSize());
    inputsIn->record(*stream);
    context->enqueue(stream->native());
    computed->record(*stream);
    if (transfers)
      for (auto& [to, from] : copiesOut) stream->copy(to.rawData(), from, to.byteSize());
    outputsOut->record(*stream);
    outputsOut->synchronize();
    if (!timed) return;
    latency.push_back(outputsOut->millisecondsSince(*start));
    hostToDevice.push_back(inputsIn->millisecondsSince(*start));
    compute.push_back(computed->millisecondsSince(*inputsIn));
    deviceToHost.push_back(outputsOut->millisecondsSince(*computed));
  }
};

Lane makeLane(const Engine& engine, const std::map<std::string, HostTensor>& inputs, bool cudaGraph) {
  const EngineProgram& program = engine.program();
  const Backend& backend = *program.engine;
  Lane lane;
  lane.context = engine.createExecutionContext();
  lane.context->setGraphCapture(cudaGraph);
  lane.stream = backend.createStream();
  lane.start = backend.createEvent();
  lane.inputsIn = backend.createEvent();
  lane.computed = backend.createEvent();
  lane.outputsOut = backend.createEvent();
  auto memoryFor = [&](const std::string& name, uint64_t bytes) -> void* {
    const bool device = engine.tensorMemorySpace(name) == "device";
    DeviceAllocator& allocator = device ? backend.allocator() : program.cpu->allocator();
    lane.memory.push_back(allocateBuffer(allocator, std::max<uint64_t>(bytes, 1), 256));
    return lane.memory.back().get();
  };
  for (const auto& [name, tensor] : inputs) {
    lane.context->setInputShape(name, tensor.dims());
    void* memory = memoryFor(name, tensor.byteSize());
    lane.stream->copy(memory, tensor.rawData(), tensor.byteSize());  // also there without transfers
    lane.copiesIn.emplace_back(memory, &tensor);
    lane.context->setTensorAddress(name, memory);
  }
  lane.stream->synchronize();
  for (const IOTensorInfo& io : engine.ioTensors()) {
    if (io.isInput) continue;
    std::vector<int64_t> dims;
    try {
      dims = lane.context->tensorShape(io.name);
    } catch (const Error&) {
      throw Error(ErrorCode::kUnsupported, "output '" + io.name + "' has a size that depends on data; measuring "
                                           "throughput needs outputs of known size (use kiln run)");
    }
    HostTensor host(io.dtype, dims);
    void* memory = memoryFor(io.name, host.byteSize());
    lane.context->setTensorAddress(io.name, memory);
    lane.copiesOut.emplace_back(std::move(host), memory);
  }
  return lane;
}

json statsJson(const LatencyStats& s) {
  return {{"min_ms", s.min}, {"mean_ms", s.mean}, {"median_ms", s.median}, {"p90_ms", s.p90},
          {"p95_ms", s.p95}, {"p99_ms", s.p99},   {"max_ms", s.max}};
}

}  // namespace

LatencyStats latencyStats(std::vector<double> ms) {
  LatencyStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, size_t(std::ceil(q * double(ms.size())) - 1))]; };
  s.min = ms.front();
  s.max = ms.back();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / double(ms.size());
  s.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  s.p90 = at(0.90);
  s.p95 = at(0.95);
  s.p99 = at(0.99);
  return s;
}

std::string PerformanceReport::toJson(int indent) const {
  json j = json::parse(layers.toJson(-1));
  j["performance"] = {{"streams", streams},
                      {"data_transfers", dataTransfers},
                      {"cuda_graph", cudaGraph},
                      {"runs", runs},
                      {"wall_s", wallSeconds},
                      {"throughput_per_s", throughput},
                      {"latency", statsJson(latency)},
                      {"host_to_device", statsJson(hostToDevice)},
                      {"compute", statsJson(compute)},
                      {"device_to_host", statsJson(deviceToHost)}};
  return j.dump(indent);
}

PerformanceReport measurePerformance(const Engine& engine, const std::map<std::string, HostTensor>& inputs,
                                     const PerformanceOptions& options) {
  if (options.iterations < 1) throw Error(ErrorCode::kInvalidArgument, "--iterations must be at least 1");
  if (options.streams < 1 || options.streams > 64)
    throw Error(ErrorCode::kInvalidArgument, "--streams must be between 1 and 64, got " + std::to_string(options.streams));
  if (options.durationSeconds < 0 || options.warmupMs < 0)
    throw Error(ErrorCode::kInvalidArgument, "--duration and --warmup cannot be negative");
  std::vector<Lane> lanes;
  for (int i = 0; i < options.streams; ++i) lanes.push_back(makeLane(engine, inputs, options.cudaGraph));

  for (Lane& lane : lanes) {  // warm-up, one lane after the other (first runs set up per-shape state)
    const auto start = Clock::now();
    int runs = 0;  // two at least: a CUDA graph is recorded on the second
    do lane.runOnce(options.dataTransfers, false);
    while (++runs < 2 || msSince(start) < options.warmupMs);
  }
  std::vector<std::string> errors(lanes.size());
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (size_t i = 0; i < lanes.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        for (int run = 0; run < options.iterations || msSince(start) < options.durationSeconds * 1000; ++run)
          lanes[i].runOnce(options.dataTransfers, true);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  const double wallMs = msSince(start);
  for (const auto& e : errors)
    if (!e.empty()) throw Error(ErrorCode::kRuntimeError, e);

  PerformanceReport report;
  report.plan = engine.planInfo();
  report.streams = options.streams;
  report.dataTransfers = options.dataTransfers;
  report.cudaGraph = options.cudaGraph;
  std::vector<double> latency, h2d, compute, d2h;
  for (const Lane& lane : lanes) {
    latency.insert(latency.end(), lane.latency.begin(), lane.latency.end());
    h2d.insert(h2d.end(), lane.hostToDevice.begin(), lane.hostToDevice.end());
    compute.insert(compute.end(), lane.compute.begin(), lane.compute.end());
    d2h.insert(d2h.end(), lane.deviceToHost.begin(), lane.deviceToHost.end());
  }
  report.runs = int64_t(latency.size());
  report.wallSeconds = wallMs / 1000;
  report.throughput = report.wallSeconds > 0 ? double(report.runs) / report.wallSeconds : 0;
  report.latency = latencyStats(latency);
  report.hostToDevice = latencyStats(h2d);
  report.compute = latencyStats(compute);
  report.deviceToHost = latencyStats(d2h);
  lanes.clear();  // their memory back before the profiled pass
  if (options.layerProfileRuns > 0) report.layers = profileEngine(engine, inputs, options.layerProfileRuns, 2);
  report.layers.plan = report.plan;
  for (const auto& [name, t] : inputs) {
    if (!report.inputShapes.empty()) report.inputShapes += ",";
    report.inputShapes += name + ":" + dimsToString(t.dims());
  }
  report.layers.inputShapes = report.inputShapes;
  return report;
}

}  // namespace kiln
