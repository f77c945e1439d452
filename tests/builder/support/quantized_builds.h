#pragma once
// What the quantized build tests (int8_build_test.cpp, small_float_build_test.cpp) share: a small
// CNN with a Gemm, calibration images in a temporary folder, configs and agreement measures.
#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kiln::test::quantized_builds {

// x [N, 3, 11, 13] -> Conv 3x3 + Relu -> Conv 3x3 stride 2 -> Flatten -> Gemm (transB, alpha,
// beta, C) -> y [N, 5].
std::shared_ptr<Network> convGemmNetwork(uint32_t weightSeed = 1);

// Random images with an uneven spread: calibration must not see only one scale.
HostTensor images(int64_t batch, uint32_t seed);

// A folder named after the running test, with calib/ holding three calibration batches of images.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string calibration() const { return (path_ / "calib").string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// An INT8 build of convGemmNetwork calibrated on `data` (batch 1 to 4, tuned for 2).
BuilderConfig int8Config(const std::string& data, CalibratorKind calibrator = CalibratorKind::kEntropy);

const LayerSummary& layerNamed(const BuildReport& report, const std::string& name);

// The plan's output y for input x.
HostTensor runPlan(const std::vector<uint8_t>& plan, const HostTensor& x);

struct Agreement {
  double relativeL2 = 0, cosine = 0;
};
Agreement agreement(const HostTensor& actual, const HostTensor& expected);

}  // namespace kiln::test::quantized_builds
