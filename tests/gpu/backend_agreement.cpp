#include "gpu/backend_agreement.h"

#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/runtime.h>

#include "backends/backend_registry.h"

#include <algorithm>
#include <cmath>

namespace kiln::test {

std::string whyNoCudaBackend() {
  static const std::string why = [] {
    try {
      BackendRegistry::instance().get("cuda");
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }();
  return why;
}

double nmseTolerance(Precision precision) {
  switch (precision) {
    case Precision::kFP16: return 1e-5;
    case Precision::kBF16: return 1e-4;
    case Precision::kTF32: return 1e-6;
    default: return 1e-10;
  }
}

namespace {

std::vector<double> valuesOf(const HostTensor& t) {
  if (t.dtype() == DataType::kFloat16 || t.dtype() == DataType::kBFloat16 || t.dtype() == DataType::kFloat32 ||
      t.dtype() == DataType::kFloat64 || isInteger(t.dtype()) || t.dtype() == DataType::kBool)
    return t.toDoubleVector();
  return {};
}

}  // namespace

const LayerSummary* Agreement::gpuLayerOfType(const std::string& type) const {
  for (const LayerSummary& l : gpuLayers)
    if (l.type == type) return &l;
  return nullptr;
}

void expectNoFailedTactics(const Agreement& agreement) {
  for (const LayerSummary& l : agreement.gpuLayers)
    for (const TacticCandidate& c : l.tacticCandidates)
      EXPECT_NE(c.status.rfind("failed", 0), 0u) << "layer '" << l.name << "' tactic " << c.tactic << ": " << c.status;
}

Agreement expectBackendsAgree(const std::string& modelBytes, const std::map<std::string, HostTensor>& inputs,
                              Precision precision, bool requireEveryLayerOnGpu) {
  AgreementOptions options;
  options.precision = precision;
  options.requireEveryLayerOnGpu = requireEveryLayerOnGpu;
  return expectBackendsAgree(modelBytes, inputs, options);
}

Agreement expectBackendsAgree(const std::string& modelBytes, const std::map<std::string, HostTensor>& inputs,
                              const AgreementOptions& options) {
  const Precision precision = options.precision;
  Agreement result;
  auto network = OnnxImporter().importBytes(modelBytes);
  BuilderConfig cpuConfig;
  BuilderConfig gpuConfig;
  gpuConfig.backend = BackendKind::kCuda;
  gpuConfig.allowTF32 = precision == Precision::kTF32;
  gpuConfig.allowFP16 = precision == Precision::kFP16;
  gpuConfig.allowBF16 = precision == Precision::kBF16;
  gpuConfig.strictDevice = options.requireEveryLayerOnGpu;
  gpuConfig.forcedTactics = options.forcedTactics;
  if (options.configure) {
    options.configure(cpuConfig);
    options.configure(gpuConfig);
  }
  OptimizationProfile profile;
  for (const auto& [name, tensor] : inputs)
    if (!network->tensor(name).shape.isFullyKnown())
      profile.inputs[name] = {tensor.dims(), tensor.dims(), tensor.dims()};
  if (!profile.inputs.empty()) {
    cpuConfig.profiles.push_back(profile);
    gpuConfig.profiles.push_back(profile);
  }
  BuildResult gpuBuild;
  try {
    gpuBuild = Builder().build(*network, gpuConfig);
  } catch (const Error& e) {
    ADD_FAILURE() << "building for CUDA failed: " << e.what();
    return result;
  }
  result.everyLayerOnGpu = true;
  for (const auto& l : gpuBuild.report.layers) {
    if (l.phase == "launch" && l.backend != "cuda") result.everyLayerOnGpu = false;
    if (l.phase == "launch" && l.backend == "cuda") result.gpuLayers.push_back(l);
  }
  auto cpu = Runtime().load(Builder().build(*network, cpuConfig).plan)->createExecutionContext()->run(inputs);
  std::map<std::string, HostTensor> gpu;
  try {
    gpu = Runtime().load(gpuBuild.plan)->createExecutionContext()->run(inputs);
  } catch (const Error& e) {
    ADD_FAILURE() << "running on CUDA failed: " << e.what();
    return result;
  }
  for (const auto& [name, want] : cpu) {
    auto it = gpu.find(name);
    if (it == gpu.end()) {
      ADD_FAILURE() << "output '" << name << "' missing from the CUDA engine";
      continue;
    }
    const HostTensor& got = it->second;
    if (got.dims() != want.dims() || got.dtype() != want.dtype()) {
      ADD_FAILURE() << "output '" << name << "': CUDA " << toString(got.dtype()) << dimsToString(got.dims()) << ", CPU "
                    << toString(want.dtype()) << dimsToString(want.dims());
      continue;
    }
    const std::vector<double> g = valuesOf(got), w = valuesOf(want);
    const bool exact = isInteger(want.dtype()) || want.dtype() == DataType::kBool;
    double error = 0, norm = 0;
    bool finite = true;
    for (size_t i = 0; i < w.size(); ++i) {
      if (!std::isfinite(g[i]) && std::isfinite(w[i])) finite = false;
      if (std::isnan(g[i]) != std::isnan(w[i])) finite = false;
      if (std::isnan(w[i]) || std::isinf(w[i])) continue;
      error += (g[i] - w[i]) * (g[i] - w[i]);
      norm += w[i] * w[i];
    }
    // A reference of RMS below 1e-6 (a window of one value, 0.42 - 0.5 + 0.08 in float) is compared
    // absolutely: its relative error says only how each side rounds zero.
    const double nmse = w.empty() ? 0 : error / std::max(norm, double(w.size()) * 1e-12);
    if (nmse > result.worstNmse || result.worstOutput.empty()) {
      result.worstNmse = nmse;
      result.worstOutput = name;
    }
    EXPECT_TRUE(finite) << "output '" << name << "' has NaN or infinity where the CPU has none (or the reverse)";
    if (exact) EXPECT_EQ(error, 0.0) << "output '" << name << "' differs from the CPU's";
    else
      EXPECT_LE(nmse, options.nmseTolerance > 0 ? options.nmseTolerance : nmseTolerance(precision))
          << "output '" << name << "' NMSE against the CPU";
  }
  return result;
}

}  // namespace kiln::test
