#include <kiln/builder_config.h>
#include <kiln/logger.h>

namespace kiln {

const char* toString(Precision precision) {
  switch (precision) {
    case Precision::kFP32: return "fp32";
    case Precision::kTF32: return "tf32";
    case Precision::kFP16: return "fp16";
    case Precision::kBF16: return "bf16";
    case Precision::kINT8: return "int8";
    case Precision::kFP8: return "fp8";
    case Precision::kFP4: return "fp4";
  }
  return "fp32";
}

std::optional<Precision> parsePrecision(const std::string& name) {
  for (Precision p : {Precision::kFP32, Precision::kTF32, Precision::kFP16, Precision::kBF16, Precision::kINT8,
                      Precision::kFP8, Precision::kFP4})
    if (name == toString(p)) return p;
  return std::nullopt;
}

const char* toString(BackendKind backend) {
  switch (backend) {
    case BackendKind::kCuda: return "cuda";
    case BackendKind::kTestDevice: return "cpu-device";
    default: return "cpu";
  }
}

std::optional<BackendKind> parseBackendKind(const std::string& name) {
  for (BackendKind kind : {BackendKind::kCpu, BackendKind::kCuda, BackendKind::kTestDevice})
    if (name == toString(kind)) return kind;
  return std::nullopt;
}

const char* toString(CalibratorKind calibrator) {
  switch (calibrator) {
    case CalibratorKind::kMinMax: return "minmax";
    case CalibratorKind::kPercentile: return "percentile";
    default: return "entropy";
  }
}

std::optional<CalibratorKind> parseCalibratorKind(const std::string& name) {
  for (CalibratorKind kind : {CalibratorKind::kEntropy, CalibratorKind::kMinMax, CalibratorKind::kPercentile})
    if (name == toString(kind)) return kind;
  return std::nullopt;
}

Precision BuilderConfig::storagePrecision() const {
  if (strongTyping) return Precision::kFP32;
  if (allowFP16) return Precision::kFP16;
  if (allowBF16) return Precision::kBF16;
  return Precision::kFP32;
}

const char* toString(Severity severity) {
  switch (severity) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "info";
    case Severity::kVerbose: return "verbose";
  }
  return "info";
}

Logger& silentLogger() {
  struct Silent : Logger {
    void log(Severity, const std::string&) override {}
  };
  static Silent logger;
  return logger;
}

}  // namespace kiln
