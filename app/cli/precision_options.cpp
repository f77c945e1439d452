#include "precision_options.h"

#include <kiln/error.h>
#include <kiln/layer_precision_file.h>

#include <cmath>
#include <sstream>

namespace kiln::cli {
namespace {

// --calib-mean / --calib-std: one value per RGB channel, "0.485,0.456,0.406".
std::vector<float> channelValues(const std::string& text, const char* option, bool positive) {
  std::vector<float> values;
  bool valid = true;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    size_t used = 0;
    float v = 0;
    try {
      v = std::stof(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    valid = valid && used > 0 && used == item.size() && std::isfinite(v) && (!positive || v > 0);
    values.push_back(v);
  }
  if (!valid || values.size() != 3)
    throw Error(ErrorCode::kInvalidArgument, std::string(option) + " '" + text + "' must be three " +
                                                 (positive ? "positive " : "") +
                                                 "numbers, one per RGB channel, e.g. " +
                                                 (positive ? "0.229,0.224,0.225" : "0.485,0.456,0.406"));
  return values;
}

// --calib-* options: where an --int8 / --fp8 / --fp4 build's activation scales come from.
CalibrationConfig calibrationOptions(const PrecisionOptions& o) {
  const bool given = !o.calibData.empty() || !o.calibCache.empty();
  if (given && !o.int8 && !o.fp8 && !o.fp4)
    throw Error(ErrorCode::kInvalidArgument, "--calib-data and --calib-cache need --int8, --fp8 or --fp4");
  const auto calibrator = parseCalibratorKind(o.calibrator);
  if (!calibrator)
    throw Error(ErrorCode::kInvalidArgument,
                "--calibrator '" + o.calibrator + "' is not a calibrator; use entropy, minmax or percentile");
  if (!(o.calibPercentile > 0 && o.calibPercentile <= 100))
    throw Error(ErrorCode::kInvalidArgument, "--calib-percentile must be in (0, 100], e.g. 99.99");
  if (o.calibBatches < 0) throw Error(ErrorCode::kInvalidArgument, "--calib-batches must be 0 (all) or more");
  CalibrationConfig c;
  c.dataPath = o.calibData;
  c.calibrator = *calibrator;
  c.percentile = o.calibPercentile;
  c.maxBatches = o.calibBatches;
  c.cachePath = o.calibCache;
  c.imageMean = channelValues(o.calibMean, "--calib-mean", false);
  c.imageStd = channelValues(o.calibStd, "--calib-std", true);
  return c;
}

}  // namespace

void addPrecisionOptions(CLI::App* sub, PrecisionOptions& o) {
  sub->add_flag("--fp16", o.fp16, "Allow float16 layers (on the CPU: fp16 activations and weights between layers)");
  sub->add_flag("--bf16", o.bf16, "Allow bfloat16 layers");
  sub->add_flag("--int8", o.int8,
                "Quantize Conv/MatMul/Gemm layers to int8 (post-training: scales from --calib-data or --calib-cache)");
  sub->add_flag("--fp8", o.fp8,
                "Quantize Conv/MatMul/Gemm layers to fp8 e4m3 (scales from --calib-data or --calib-cache: "
                "threshold / 448; the CPU emulates fp8 exactly)");
  sub->add_flag("--fp4", o.fp4,
                "Quantize Conv/MatMul/Gemm layers to fp4 (NVFP4: e2m1 with an e4m3 scale per 16 along K). FP4 runs "
                "on Blackwell GPUs only; the CPU backend emulates it so its accuracy can be judged");
  sub->add_flag("--quantize-where-faster", o.quantizeWhereFaster,
                "With --int8/--fp8/--fp4: time each layer quantized and in the float precision, and quantize only "
                "those that are faster quantized (TensorRT's choice when precisions are allowed, not obeyed); the "
                "others stay float and `kiln inspect` gives both times");
  sub->add_flag("--int8-residuals", o.int8Residuals,
                "With --int8: a block's output that int8 layers read as input and as residual crosses as int8, the "
                "residual dequantized in the reader's epilogue (TensorRT's int8 residual; slower than float residuals "
                "on the H200 today, see docs/benchmarks-gpu.md)");
  sub->add_option("--calib-data", o.calibData,
                  "Folder of .npy calibration batches: NAME.npy or NAME.0.npy, NAME.1.npy, ... per input NAME "
                  "(characters other than letters, digits, . - _ become _); dim 0 of a file is the batch, and a "
                  "file of k*B samples gives k batches where the model fixes dim 0 to B. One .npy file for a model "
                  "with one input. Or a folder of PNG/JPEG images for a model with one image input (float32, 4-D, "
                  "3 channels, NCHW or NHWC as its shape says), in name order, in batches of its batch dim: each "
                  "resized bilinearly (antialiased when shrinking) to cover the input's HxW, centre-cropped, "
                  "scaled to [0,1], RGB, normalised by --calib-mean/--calib-std");
  sub->add_option("--calib-mean", o.calibMean,
                  "Image calibration: per-channel mean subtracted from [0,1] RGB values (default ImageNet's "
                  "0.485,0.456,0.406)");
  sub->add_option("--calib-std", o.calibStd,
                  "Image calibration: per-channel std the values are divided by (default ImageNet's "
                  "0.229,0.224,0.225; 1,1,1 keeps [0,1])");
  sub->add_option("--calibrator", o.calibrator,
                  "entropy (TensorRT's KL divergence, default), minmax (largest |x|) or percentile (of |x|)");
  sub->add_option("--calib-percentile", o.calibPercentile, "The percentile calibrator's percentile (default 99.99)");
  sub->add_option("--calib-batches", o.calibBatches, "Calibrate on the first N batches (default: all)");
  sub->add_option("--calib-cache", o.calibCache,
                  "Calibration cache: read when it exists (no data needed; refused for another model or "
                  "calibrator), else written after calibrating");
  sub->add_option("--opt-level", o.optLevel,
                  "Optimisation level 0-5: 0 no graph passes and each layer's first tactic, untimed; 1 basic "
                  "passes, first tactics; 2 BatchNorm folding and epilogue fusion, the first two tactics timed; 3 "
                  "(default) every pass, every tactic timed; 4, 5 twice and four times as many library candidates "
                  "(cuBLASLt heuristics, cuDNN engine configs)");
  sub->add_option("--backend", o.backend, "cpu or cuda (default cpu); cpu-device: the test device backend");
  sub->add_option("--layer-precision", o.layerPrecisions,
                  "LAYER:PRECISION: force an engine layer's precision (repeatable; names as `kiln inspect PLAN` "
                  "lists them)")
      ->allow_extra_args(false);
  sub->add_option("--layer-precision-file", o.layerPrecisionFile,
                  "File of LAYER:PRECISION lines ('#' comments), as `kiln debug precision --write-constraints` "
                  "writes it; --layer-precision wins where both name a layer");
}

void applyPrecisionOptions(const PrecisionOptions& o, BuilderConfig& config) {
  const auto backend = parseBackendKind(o.backend);
  if (!backend)
    throw Error(ErrorCode::kInvalidArgument, "--backend '" + o.backend + "' is not a backend; use cpu or cuda (or "
                                             "cpu-device, the test device backend)");
  config.backend = *backend;
  config.allowFP16 = o.fp16;
  config.allowBF16 = o.bf16;
  config.allowINT8 = o.int8;
  config.allowFP8 = o.fp8;
  config.allowFP4 = o.fp4;
  if (o.quantizeWhereFaster && !o.int8 && !o.fp8 && !o.fp4)
    throw Error(ErrorCode::kInvalidArgument, "--quantize-where-faster needs --int8, --fp8 or --fp4");
  config.quantizeWhereFaster = o.quantizeWhereFaster;
  if (o.int8Residuals && !o.int8) throw Error(ErrorCode::kInvalidArgument, "--int8-residuals needs --int8");
  config.int8Residuals = o.int8Residuals;
  config.calibration = calibrationOptions(o);
  if (o.optLevel < 0 || o.optLevel > 5)
    throw Error(ErrorCode::kInvalidArgument, "--opt-level " + std::to_string(o.optLevel) + " is outside 0-5");
  config.optimizationLevel = o.optLevel;
  if (!o.layerPrecisionFile.empty()) config.layerPrecisions = readLayerPrecisionFile(o.layerPrecisionFile);
  for (const auto& spec : o.layerPrecisions) {
    auto [layer, precision] = parseLayerPrecision(spec, "--layer-precision");
    config.layerPrecisions[layer] = precision;
  }
}

}  // namespace kiln::cli
