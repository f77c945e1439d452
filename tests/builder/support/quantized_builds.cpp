#include "builder/support/quantized_builds.h"

#include <kiln/npy.h>
#include <kiln/onnx_importer.h>
#include <kiln/runtime.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <stdexcept>

namespace kiln::test::quantized_builds {

namespace fs = std::filesystem;
using namespace kiln::test::onnx_types;

std::shared_ptr<Network> convGemmNetwork(uint32_t weightSeed) {
  ModelBuilder mb;
  mb.symbolicInput("x", kFloat, {"N", "3", "11", "13"})
      .initializer("w1", randomFloats({8, 3, 3, 3}, weightSeed))
      .initializer("b1", randomFloats({8}, weightSeed + 1))
      .initializer("w2", randomFloats({6, 8, 3, 3}, weightSeed + 2, -0.4f, 0.4f))
      .initializer("wg", randomFloats({5, 6 * 6 * 7}, weightSeed + 3, -0.2f, 0.2f))
      .initializer("cg", randomFloats({5}, weightSeed + 4))
      .output("y");
  auto& c1 = mb.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  ModelBuilder::setInts(c1, "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& c2 = mb.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  ModelBuilder::setInts(c2, "pads", {1, 1, 1, 1});
  ModelBuilder::setInts(c2, "strides", {2, 2});
  mb.node("Flatten", {"c2"}, {"f"}, "flatten");
  auto& gemm = mb.node("Gemm", {"f", "wg", "cg"}, {"y"}, "gemm");
  ModelBuilder::setInt(gemm, "transB", 1);
  ModelBuilder::setFloat(gemm, "alpha", 0.7f);
  ModelBuilder::setFloat(gemm, "beta", 1.3f);
  return OnnxImporter().importBytes(mb.bytes());
}

HostTensor images(int64_t batch, uint32_t seed) {
  HostTensor t = randomFloats({batch, 3, 11, 13}, seed, -1.0f, 1.0f);
  for (int64_t i = 0; i < t.elementCount(); i += 7) t.data<float>()[i] *= 2.5f;
  return t;
}

TempDir::TempDir() {
  path_ = fs::temp_directory_path() / ("kiln_int8_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(path_);
  fs::create_directories(path_ / "calib");
  for (int k = 0; k < 3; ++k)
    writeNpyFile(images(3, 100 + k), (path_ / "calib" / ("x." + std::to_string(k) + ".npy")).string());
}

TempDir::~TempDir() { fs::remove_all(path_); }

BuilderConfig int8Config(const std::string& data, CalibratorKind calibrator) {
  BuilderConfig config;
  config.allowINT8 = true;
  config.calibration.dataPath = data;
  config.calibration.calibrator = calibrator;
  config.profiles.push_back({{{"x", {{1, 3, 11, 13}, {2, 3, 11, 13}, {4, 3, 11, 13}}}}});
  return config;
}

const LayerSummary& layerNamed(const BuildReport& report, const std::string& name) {
  for (const auto& l : report.layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

HostTensor runPlan(const std::vector<uint8_t>& plan, const HostTensor& x) {
  return Runtime().load(plan)->createExecutionContext()->run({{"x", x}}).at("y");
}

Agreement agreement(const HostTensor& actual, const HostTensor& expected) {
  double diff = 0, norm = 0, dot = 0, actualNorm = 0;
  for (int64_t i = 0; i < expected.elementCount(); ++i) {
    const double a = actual.data<float>()[i], e = expected.data<float>()[i];
    diff += (a - e) * (a - e);
    norm += e * e;
    dot += a * e;
    actualNorm += a * a;
  }
  return {std::sqrt(diff / norm), dot / std::sqrt(norm * actualNorm)};
}

}  // namespace kiln::test::quantized_builds
