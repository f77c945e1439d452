#pragma once
// Backend agreement (ggml's test-backend-ops idea): a small model built for the CPU backend and
// for the CUDA backend, run on the same random non-zero inputs, every output compared by NMSE
// within the precision's tolerance; NaN never passes. Without a usable GPU the test skips with the
// reason printed.
#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/host_tensor.h>

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>

namespace kiln::test {

// Empty when the CUDA backend can be made here, else why not.
std::string whyNoCudaBackend();

#define KILN_REQUIRE_CUDA_BACKEND()                                              \
  do {                                                                           \
    if (const std::string why = ::kiln::test::whyNoCudaBackend(); !why.empty())  \
      GTEST_SKIP() << "GPU test skipped: " << why;                               \
  } while (0)

// NMSE bound for outputs computed in `precision` (fp32 ~1e-10, tf32 ~1e-6, fp16 ~1e-5, bf16 ~1e-4).
double nmseTolerance(Precision precision);

struct Agreement {
  double worstNmse = 0;     // over every output
  std::string worstOutput;  // its name
  bool everyLayerOnGpu = false;
  std::vector<LayerSummary> gpuLayers;  // the CUDA build's launched layers on the CUDA backend

  // The first such layer of op type `type` ("MatMul", "kiln.FusedMatMul"), or nullptr.
  const LayerSummary* gpuLayerOfType(const std::string& type) const;
};

struct AgreementOptions {
  Precision precision = Precision::kFP32;
  bool requireEveryLayerOnGpu = true;
  std::map<std::string, std::string> forcedTactics;  // layer name -> tactic, for the CUDA build
  double nmseTolerance = 0;  // the bound on every float output's NMSE; 0: nmseTolerance(precision)
  // Applied to both builds' configs (e.g. an INT8 build with its calibration data); may be empty.
  std::function<void(BuilderConfig&)> configure;
};

// Builds `modelBytes` (an ONNX ModelProto) for both backends (CUDA with `precision`; fp16/bf16
// allowed when asked, TF32 off for fp32), runs both on `inputs`, and checks every output: same
// dims and dtype, finite, NMSE within nmseTolerance(precision) (integers and bools exactly).
// Records gtest failures naming the output; returns the worst error seen.
Agreement expectBackendsAgree(const std::string& modelBytes, const std::map<std::string, HostTensor>& inputs,
                              Precision precision = Precision::kFP32, bool requireEveryLayerOnGpu = true);
Agreement expectBackendsAgree(const std::string& modelBytes, const std::map<std::string, HostTensor>& inputs,
                              const AgreementOptions& options);

// Every tactic candidate the CUDA build tried could run (no "failed: ..." status); records a gtest
// failure naming the layer, the tactic and why.
void expectNoFailedTactics(const Agreement& agreement);

}  // namespace kiln::test
