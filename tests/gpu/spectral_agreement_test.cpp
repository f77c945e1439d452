// CPU and CUDA engines agree on the signal ops: DFT (axes, one-sided, inverse, dft_length), STFT
// (with and without a window), the Hann / Hamming / Blackman windows (periodic and symmetric,
// output_datatype) and MelWeightMatrix, with their scalars as graph inputs (host shape inputs), in
// fp32 and fp16.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

TEST(SpectralAgreement, DftAlongEveryAxisOneSidedAndInverse) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Case {
    std::vector<int64_t> dims;
    int64_t axis, onesided, inverse, length;  // length 0: no dft_length
  };
  for (const Case& c : std::vector<Case>{{{1, 10, 10, 1}, 1, 0, 0, 0},
                                         {{1, 10, 10, 1}, 2, 0, 0, 0},
                                         {{1, 10, 10, 2}, 1, 0, 1, 0},
                                         {{3, 7, 5, 1}, 1, 1, 0, 0},
                                         {{2, 9, 2}, 1, 0, 0, 12},
                                         {{1, 13, 3, 2}, -3, 1, 1, 6}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(c.dims) + " axis " + std::to_string(c.axis) + " " + toString(precision));
      ModelBuilder mb(17);
      mb.input("x", kFloat, c.dims).output("y");
      std::map<std::string, HostTensor> inputs{{"x", test::randomFloats(c.dims, 61)}};
      std::vector<std::string> in{"x"};
      if (c.length) {
        mb.input("n", kInt64, {});
        inputs.emplace("n", HostTensor::scalar<int64_t>(c.length));
        in.push_back("n");
      }
      auto& node = mb.node("DFT", in, {"y"}, "dft");
      ModelBuilder::setInt(node, "axis", c.axis);
      if (c.onesided) ModelBuilder::setInt(node, "onesided", 1);
      if (c.inverse) ModelBuilder::setInt(node, "inverse", 1);
      test::expectBackendsAgree(mb.bytes(), inputs, precision);
    }
}

TEST(SpectralAgreement, StftWithAndWithoutAWindow) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (bool window : {false, true})
    for (auto [length, frame, step, channels] : std::vector<std::array<int64_t, 4>>{{128, 16, 8, 1}, {37, 9, 5, 2}})
      for (Precision precision : test::kFloatPrecisions) {
        SCOPED_TRACE(std::to_string(length) + " frame " + std::to_string(frame) + (window ? " window " : " ") +
                     toString(precision));
        ModelBuilder mb(17);
        mb.input("signal", kFloat, {2, length, channels}).input("step", kInt64, {}).output("y");
        std::map<std::string, HostTensor> inputs{{"signal", test::randomFloats({2, length, channels}, 62)},
                                                 {"step", HostTensor::scalar<int64_t>(step)}};
        if (window) {
          mb.input("window", kFloat, {frame});
          inputs.emplace("window", test::randomFloats({frame}, 63, 0.1f, 1.0f));
          mb.node("STFT", {"signal", "step", "window"}, {"y"}, "stft");
        } else {
          mb.input("frame", kInt64, {});
          inputs.emplace("frame", HostTensor::scalar<int64_t>(frame));
          ModelBuilder::setInt(mb.node("STFT", {"signal", "step", "", "frame"}, {"y"}, "stft"), "onesided", 0);
        }
        test::expectBackendsAgree(mb.bytes(), inputs, precision);
      }
}

TEST(SpectralAgreement, WindowsPeriodicAndSymmetric) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    for (int64_t size : {10, 1, 33})
      for (Precision precision : test::kFloatPrecisions) {
        SCOPED_TRACE(std::string(op) + " " + std::to_string(size) + " " + toString(precision));
        ModelBuilder mb(17);
        mb.input("size", kInt64, {}).output("periodic").output("symmetric").output("doubles");
        mb.node(op, {"size"}, {"periodic"}, "periodic");
        ModelBuilder::setInt(mb.node(op, {"size"}, {"symmetric"}, "symmetric"), "periodic", 0);
        ModelBuilder::setInt(mb.node(op, {"size"}, {"doubles"}, "doubles"), "output_datatype", 11);
        test::expectBackendsAgree(mb.bytes(), {{"size", HostTensor::scalar<int64_t>(size)}}, precision);
      }
}

TEST(SpectralAgreement, MelWeightMatrix) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Case {
    int64_t melBins, dftLength, sampleRate;
    float lower, upper;
  };
  for (const Case& c : std::vector<Case>{{8, 16, 8192, 0, 4096}, {5, 31, 16000, 20, 7000}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(std::to_string(c.melBins) + " bins " + toString(precision));
      ModelBuilder mb(17);
      mb.input("bins", kInt64, {}).input("dft", kInt64, {}).input("rate", kInt64, {});
      mb.input("lower", kFloat, {}).input("upper", kFloat, {}).output("y");
      mb.node("MelWeightMatrix", {"bins", "dft", "rate", "lower", "upper"}, {"y"}, "mel");
      test::expectBackendsAgree(mb.bytes(),
                                {{"bins", HostTensor::scalar<int64_t>(c.melBins)},
                                 {"dft", HostTensor::scalar<int64_t>(c.dftLength)},
                                 {"rate", HostTensor::scalar<int64_t>(c.sampleRate)},
                                 {"lower", HostTensor::scalar<float>(c.lower)},
                                 {"upper", HostTensor::scalar<float>(c.upper)}},
                                precision);
    }
}

}  // namespace
