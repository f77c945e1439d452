#pragma once
// The INT8 steps of a build, after the graph passes (FP8 and FP4 alike). Implicit
// (BuilderConfig::allowINT8 / allowFP8 / allowFP4, or a layer held to one of them): the layers the
// engine's backend can run quantized get their activation scales (calibration/calibrate.h) and are
// replaced by quantized layers (passes/quantize_layers.h). Explicit: a model with
// QuantizeLinear / DequantizeLinear nodes (a Q/DQ model) states its own quantization, which is
// fused into the same quantized layers (passes/fuse_qdq.h) whatever the INT8 flag.
#include "../backends/backend.h"
#include "calibration/calibrate.h"

#include "quantize_where_faster.h"

#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <functional>
#include <map>
#include <string>

namespace kiln {

// "'a' (why), 'b' (why)" for the first few layers, then how many more: the warnings' lists.
std::string nameSome(const std::map<std::string, std::string>& reasons);

// Whether the build quantizes by calibration: it allows int8, fp8 or fp4, or holds a layer to one.
bool quantizesLayers(const BuilderConfig& config);

// Quantizes `network` (the model after the passes; `model` as given, which names the calibration
// cache). Fills report.calibration, adds the quantization pass to report.passes and a warning
// naming the Conv / MatMul / Gemm layers that stay float; returns those layers' reasons by name.
// With config.quantizeWhereFaster, `timing` times the candidates (quantize_where_faster.h).
std::map<std::string, std::string> quantizeForInt8(const Network& model, Network& network, const BuilderConfig& config,
                                                   const Backend& engine,
                                                   const calibration::CalibrationProgress& progress,
                                                   BuildReport& report, const QuantizationTiming& timing);

// Whether the model has QuantizeLinear / DequantizeLinear nodes.
bool isExplicitlyQuantized(const Network& model);

// Fuses the Q/DQ pairs of `network` (the model after the passes; `model` as given, whose Q/DQ nodes
// the report lists). Fills report.qdq, adds the fusion pass to report.passes and a warning naming
// the nodes that stay float; returns the Conv / MatMul / Gemm layers that stay float with why.
std::map<std::string, std::string> fuseExplicitQuantization(const Network& model, Network& network,
                                                            const BuilderConfig& config, const Backend& engine,
                                                            BuildReport& report);

// Gives each quantized layer that runs on a backend keeping fp16 / bf16 activations itself (not
// converting float storage, as the CUDA backend) the build's float storage
// (quantized::kFloatStorage), so an fp16 engine needs no Cast layers around its int8 layers.
// `backendOf(i)` is the backend layer i runs on.
void giveQuantizedLayersFloatStorage(Network& network, const BuilderConfig& config,
                                     const std::function<const Backend&(size_t)>& backendOf);

}  // namespace kiln
