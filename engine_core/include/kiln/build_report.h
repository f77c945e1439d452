#pragma once
// What the builder did, as plain values: the passes and what each changed, every engine layer with
// its precision, tactic and the ONNX nodes it came from, and the memory plan's totals.
#include <kiln/builder_config.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct PassRecord {
  std::string name;
  int64_t layersBefore = 0;
  int64_t layersAfter = 0;
  std::vector<std::string> changes;  // one line per match: "fused Conv 'c1' + Relu 'r1'"
  double milliseconds = 0;
};

struct TensorSummary {
  std::string name;
  std::string dtype;  // what its memory holds: "float32", "float16", ...
  std::string shape;  // "[N,3,224,224]"
  std::string space = "host";     // "host" or "device"
  std::string format = "linear";  // "linear" or "nhwc"
};

// A tactic the builder considered for a layer, and what became of it.
struct TacticCandidate {
  std::string tactic;
  double milliseconds = -1;  // median time, measured now or from the timing cache; -1: not timed
  // "timed", "cached", "only candidate", "first candidate (optimization level 1)", "forced",
  // "skipped: ..." (over the workspace limit), "failed: ...", "not timed: ..." (past the level's breadth, ...)
  std::string status;
  int64_t workspaceBytes = 0;
};

struct LayerSummary {
  std::string name;
  std::string type;       // op type; Kiln's fused layers use the "kiln." prefix (kiln.FusedConv)
  std::string precision;  // "fp32", "fp16", ...
  std::string tactic;     // stable tactic id
  std::vector<TensorSummary> inputs, outputs;
  std::vector<std::string> origins;  // ONNX nodes fused into this layer
  std::vector<TacticCandidate> tacticCandidates;  // every candidate, in the backend's order
  int64_t workspaceBytes = 0;                     // the chosen tactic's, at the max shapes
  std::string backend = "cpu";                    // the backend that runs it
  std::string role = "compute";   // "compute", or a layer the builder inserted: "copy", "cast", "reformat"
  std::string phase = "launch";   // "launch", or "shape": host shape arithmetic before enqueue
  std::string fallback;           // why it runs on the CPU instead of the engine's backend
  // Why a Conv / MatMul / Gemm layer of an INT8 build stays in a float precision (the backend has
  // no int8 kernel for it, its weights are not constant, a --layer-precision asks otherwise, ...).
  std::string precisionReason;
  std::string dataDependent;      // why its output shape depends on data (the engine synchronises there)
};

// Where an INT8 build's activation scales came from.
struct CalibrationSummary {
  std::string calibrator;  // "entropy", "minmax", "percentile 99.99"; empty: no calibration
  std::string source;      // "data" (the FP32 network ran over the batches) or "cache"
  int64_t batches = 0;     // batches run (0 when the scales came from the cache)
  std::string cachePath;   // the cache read or written, if any
  std::map<std::string, float> scales;  // activation tensor -> scale (threshold / 127)
};

// A QuantizeLinear / DequantizeLinear node of an explicitly quantized (Q/DQ) model and what the
// build made of it: part of int8 layers, a float layer that stays (with why), or gone (with how).
struct QdqNodeSummary {
  std::string node;                    // the ONNX node's name
  std::string op;                      // "QuantizeLinear" or "DequantizeLinear"
  std::vector<std::string> fusedInto;  // the int8 layers it became part of
  std::string unfused;  // why it still runs as a float QuantizeLinear / DequantizeLinear layer ("": it does not)
  std::string removed;  // how it went without a layer (an identity dropped, folded into a constant)
  bool fused() const { return !fusedInto.empty() && unfused.empty(); }
};

// A Q/DQ model's nodes counted by what became of them (a node fused into some layers and kept for
// others counts as unfused).
struct QdqTally {
  int64_t fused = 0, unfused = 0, removed = 0;
  int64_t int8Layers = 0;  // distinct layers the fused nodes went into
};
QdqTally tallyQdq(const std::vector<QdqNodeSummary>& nodes);

struct BuildReport {
  std::string backend;
  int64_t onnxNodeCount = 0;
  std::vector<PassRecord> passes;
  std::vector<LayerSummary> layers;
  std::vector<std::string> warnings;
  int64_t weightBytes = 0;
  int64_t peakActivationBytes = 0;   // with buffers shared by liveness
  int64_t naiveActivationBytes = 0;  // every activation in its own buffer
  double buildMilliseconds = 0;
  // Layers the engine synchronises at (data-dependent output shapes, host layers between device
  // ones): such an engine cannot be captured in a CUDA graph.
  std::vector<std::string> synchronizingLayers;
  CalibrationSummary calibration;
  std::vector<QdqNodeSummary> qdq;  // every Q/DQ node of a Q/DQ model; empty for other models
  bool graphCapturable() const { return synchronizingLayers.empty(); }

  std::string toJson(int indent = 2) const;
  static BuildReport fromJson(const std::string& json);  // throws kiln::Error on malformed input
};

}  // namespace kiln
