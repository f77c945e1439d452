#pragma once
// What the builder is asked to do: precisions, shape profiles, optimisation level, backend.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// kFP8: fp8 e4m3; kFP4: NVFP4 (e2m1 values, an e4m3 scale per 16 along K, an fp32 scale per
// tensor), Blackwell's, emulated on the CPU. Plans store the value: append new ones at the end.
enum class Precision { kFP32, kTF32, kFP16, kBF16, kINT8, kFP8, kFP4 };
const char* toString(Precision precision);
std::optional<Precision> parsePrecision(const std::string& name);  // "fp32", "fp16", ...

// kTestDevice ("cpu-device") runs the CPU kernels on memory the runtime may not touch directly: a
// device backend for tests, so CI checks the runtime's device contract without a GPU.
enum class BackendKind { kCpu, kCuda, kTestDevice };
const char* toString(BackendKind backend);  // the backend's registry name: "cpu", "cuda", "cpu-device"
std::optional<BackendKind> parseBackendKind(const std::string& name);

// min/opt/max dims of one input: every runtime shape must lie between min and max, and the builder
// tunes for opt.
struct ShapeRange {
  std::vector<int64_t> min, opt, max;
};

struct OptimizationProfile {
  std::map<std::string, ShapeRange> inputs;
};

// How post-training INT8 calibration picks each activation's threshold T (scale = T / 127) from
// the values it saw: kEntropy, TensorRT's entropy calibrator (the threshold whose 128-level
// quantization of the |x| histogram loses the least information, by KL divergence); kMinMax, the
// largest |x|; kPercentile, a percentile of |x|.
enum class CalibratorKind { kEntropy, kMinMax, kPercentile };
const char* toString(CalibratorKind calibrator);  // "entropy", "minmax", "percentile"
std::optional<CalibratorKind> parseCalibratorKind(const std::string& name);

// Where a quantized build's activation scales come from (allowINT8, allowFP8 or allowFP4).
struct CalibrationConfig {
  // A folder of NumPy .npy files, for each graph input NAME either NAME.npy or NAME.0.npy,
  // NAME.1.npy, ... (characters other than letters, digits, '.', '-' and '_' in NAME become '_').
  // Each file is one calibration batch, its dim 0 the batch; where the model fixes dim 0 to B, a
  // file of k*B samples gives k batches. Every input needs the same number of batches. A single
  // .npy file serves a model with one input. Or a folder of PNG / JPEG images for a model with one
  // image input (float32, 4-D, 3 channels: NCHW or NHWC), in name order: each is resized
  // (bilinear, widened when shrinking as PIL's) so that it covers the input's height and width,
  // centre-cropped to them, scaled to [0, 1] and normalised per RGB channel by the two below.
  std::string dataPath;
  std::vector<float> imageMean = {0.485f, 0.456f, 0.406f};  // ImageNet's, as torchvision's models
  std::vector<float> imageStd = {0.229f, 0.224f, 0.225f};
  CalibratorKind calibrator = CalibratorKind::kEntropy;
  double percentile = 99.99;  // of |x|, for kPercentile
  int64_t maxBatches = 0;     // use the first N batches; 0: all of them
  // A calibration cache: read when the file exists (it must be for this model and calibrator;
  // then no data is needed), written after calibrating from data. Empty: none.
  std::string cachePath;
};

struct BuilderConfig {
  BackendKind backend = BackendKind::kCpu;
  // Precisions the builder may choose from; FP32 is always allowed as the fallback.
  bool allowTF32 = true;
  bool allowFP16 = false;
  bool allowBF16 = false;
  bool allowINT8 = false;
  // INT8, FP8 and FP4 quantize Conv / MatMul / Gemm layers with calibrated activation scales
  // (`calibration`); with more than one, each layer takes the narrowest its backend runs.
  bool allowFP8 = false;
  bool allowFP4 = false;
  // INT8 / FP8 / FP4 as permissions rather than orders (TensorRT's choice when precision constraints
  // are not obeyed): each layer that calibration would quantize is timed quantized and in the float
  // precision, and keeps the quantized one only where it is faster. Layers in layerPrecisions are not
  // questioned; untimed builds (optimisation levels 0 and 1) quantize every candidate.
  bool quantizeWhereFaster = false;
  // INT8: a result that int8 layers read as their activation and as their residual (a ResNet block's
  // output) crosses to them as int8, the residual added as float(q) * scale (TensorRT's int8
  // residual). Off by default: cuDNN's graphs take float residuals only, and with Kiln's 8-bit kernel
  // and cuBLASLt on those layers ResNet-50 b128 measured 6.53 ms on the H200 against 6.11 without.
  bool int8Residuals = false;
  // Keep the model's own types everywhere (no precision search).
  bool strongTyping = false;
  // Layer name -> precision it must run in.
  std::map<std::string, Precision> layerPrecisions;
  // Layer name (after the passes) -> the tactic it must use, taken without timing (a tactic that does
  // not apply to the layer is an error naming the ones that do).
  std::map<std::string, std::string> forcedTactics;
  std::vector<OptimizationProfile> profiles;
  // 0: no graph passes, each layer on its backend's first tactic, untimed; 1: the basic passes
  // (fold, remove no-ops, dead code), first tactics; 2: also BatchNorm folding and conv / matmul
  // epilogue fusion, the first two tactics timed; 3 (default): every pass, every tactic the backends
  // list timed; 4, 5: backends with growing lists (cuBLASLt heuristics, cuDNN engine configs) list
  // two and four times as many (TacticSearch, builder/tactic_selector.h).
  int optimizationLevel = 3;
  uint64_t workspaceBytes = uint64_t(1) << 30;
  // Layers the backend cannot run fall back to the CPU with a warning; strict: the build fails
  // naming them instead.
  bool strictDevice = false;
  std::string timingCachePath;  // empty: no persistent timing cache
  // Tactic sources the builder may not use: the first part of a tactic id ("cudnn", "cublaslt",
  // "cuda" for Kiln's own CUDA kernels, "cpu"), as trtexec's --tacticSources switches them off.
  std::vector<std::string> disabledTacticSources;
  // A tactic lock file: where it exists, every layer takes the tactic (and its payload) it names,
  // without timing; where it does not, the build writes its choices there. Two builds of a model
  // with one lock give byte-identical plans.
  std::string tacticLockPath;
  bool cudaGraphs = false;
  CalibrationConfig calibration;
  // INT4 weight-only quantization: the float32 constant weights of MatMul / Gemm layers become
  // symmetric int4, one scale per output column per group of int4GroupSize (32, 64 or 128) values
  // along K; activations stay float. Small weights and layers the backend cannot run stay float.
  bool int4Weights = false;
  int64_t int4GroupSize = 128;
  // Tensor parallelism (Megatron-LM's split of transformers): the network is cut for rank
  // tensorParallelRank of tensorParallelSize before the graph passes, each attention block keeping
  // 1/N of its heads and each MLP 1/N of its width, a kiln.AllReduce completing each block's
  // output; the rest is replicated. The plan records both (PlanInfo) and runs with a communicator
  // of that many ranks. 1: the whole model. Not with calibrated INT8 / FP8 / FP4 yet.
  int tensorParallelSize = 1;
  int tensorParallelRank = 0;

  // The lowest precision the config allows for activations between layers.
  Precision storagePrecision() const;
};

}  // namespace kiln
