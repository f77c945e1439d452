// DFT, STFT, windows, MelWeightMatrix, NonMaxSuppression, GridSample, TfIdfVectorizer,
// StringNormalizer and the random ops on the CPU reference backend, against values computed here.
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

using namespace kiln;
using kiln::test::ModelBuilder;
using kiln::test::randomFloats;

namespace {

using namespace kiln::test::onnx_types;

ValueMap run(const ModelBuilder& mb, const ValueMap& inputs) {
  return ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run(inputs);
}

template <class Fn>
void expectErrorNaming(Fn&& fn, const std::string& node) {
  try {
    fn();
    FAIL() << "expected a kiln::Error naming " << node;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(node), std::string::npos) << e.what();
  }
}

// Naive DFT of x[k] (k < n, zero-padded), bins [0, count).
std::vector<std::complex<double>> naiveDft(const std::vector<std::complex<double>>& x, int64_t n, bool inverse,
                                           int64_t count) {
  std::vector<std::complex<double>> out(static_cast<size_t>(count));
  double sign = inverse ? 1 : -1;
  for (int64_t k = 0; k < count; ++k) {
    for (int64_t j = 0; j < n && j < int64_t(x.size()); ++j)
      out[size_t(k)] += x[size_t(j)] * std::polar(1.0, sign * 2 * std::numbers::pi * double(j * k % n) / double(n));
    if (inverse) out[size_t(k)] /= double(n);
  }
  return out;
}

struct DftCase {
  int64_t length, channels, dftLength;  // dftLength 0: not given
  bool inverse, onesided;
};

void checkDft(const DftCase& c) {
  // [outer 2, length, inner 3, channels], DFT over axis 1.
  ModelBuilder mb(17);
  mb.input("x", kFloat, {2, c.length, 3, c.channels});
  std::vector<std::string> inputs{"x"};
  if (c.dftLength) {
    mb.initializer("n", HostTensor::scalar<int64_t>(c.dftLength));
    inputs.push_back("n");
  }
  auto& node = mb.node("DFT", inputs, {"y"});
  ModelBuilder::setInt(node, "axis", 1);
  ModelBuilder::setInt(node, "inverse", c.inverse);
  ModelBuilder::setInt(node, "onesided", c.onesided);
  mb.output("y");
  auto x = randomFloats({2, c.length, 3, c.channels}, uint32_t(c.length * 10 + c.channels));
  const HostTensor y = run(mb, {{"x", x}}).at("y").tensor;
  int64_t n = c.dftLength ? c.dftLength : c.length, bins = c.onesided ? n / 2 + 1 : n;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, bins, 3, 2}));
  const float* xs = x.data<float>();
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t i = 0; i < 3; ++i) {
      std::vector<std::complex<double>> line;
      for (int64_t k = 0; k < c.length; ++k) {
        const float* s = xs + ((o * c.length + k) * 3 + i) * c.channels;
        line.emplace_back(s[0], c.channels == 2 ? s[1] : 0.0f);
      }
      auto expected = naiveDft(line, n, c.inverse, bins);
      for (int64_t k = 0; k < bins; ++k) {
        const float* got = y.data<float>() + ((o * bins + k) * 3 + i) * 2;
        EXPECT_NEAR(got[0], expected[size_t(k)].real(), 1e-4) << "bin " << k;
        EXPECT_NEAR(got[1], expected[size_t(k)].imag(), 1e-4) << "bin " << k;
      }
    }
}

TEST(Signal, DftMatchesTheDefinitionForEveryLength) {
  checkDft({16, 1, 0, false, false});  // power of two
  checkDft({12, 1, 0, false, false});  // Bluestein
  checkDft({10, 2, 0, true, false});   // inverse of a complex signal
  checkDft({10, 1, 13, false, true});  // zero-padded to 13, one-sided
  checkDft({10, 2, 6, false, false});  // cut to 6
}

TEST(Signal, DftOnTheLastAxisFailsNamingTheNode) {
  ModelBuilder mb(17);
  mb.input("x", kFloat, {4, 1});
  ModelBuilder::setInt(mb.node("DFT", {"x"}, {"y"}, "dft0"), "axis", 1);
  mb.output("y");
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, "dft0");
}

TEST(Signal, StftWindowsEachFrame) {
  const int64_t length = 40, step = 6, frame = 10, frames = (length - frame) / step + 1, bins = frame / 2 + 1;
  ModelBuilder mb(17);
  mb.input("signal", kFloat, {1, length, 1}).input("window", kFloat, {frame});
  mb.initializer("step", HostTensor::scalar<int64_t>(step));
  mb.node("STFT", {"signal", "step", "window"}, {"y"});
  mb.output("y");
  auto signal = randomFloats({1, length, 1}, 21), window = randomFloats({frame}, 22, 0.0f, 1.0f);
  const HostTensor y = run(mb, {{"signal", signal}, {"window", window}}).at("y").tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, frames, bins, 2}));
  for (int64_t f = 0; f < frames; ++f) {
    std::vector<std::complex<double>> samples;
    for (int64_t k = 0; k < frame; ++k) samples.emplace_back(signal.data<float>()[f * step + k] * window.data<float>()[k]);
    auto expected = naiveDft(samples, frame, false, bins);
    for (int64_t k = 0; k < bins; ++k) {
      EXPECT_NEAR(y.data<float>()[(f * bins + k) * 2], expected[size_t(k)].real(), 1e-4);
      EXPECT_NEAR(y.data<float>()[(f * bins + k) * 2 + 1], expected[size_t(k)].imag(), 1e-4);
    }
  }
}

TEST(Signal, WindowsFollowTheirCosineSums) {
  struct Window {
    const char* op;
    double a0, a1, a2;
  };
  for (Window w : {Window{"HannWindow", 0.5, 0.5, 0}, Window{"HammingWindow", 25.0 / 46, 21.0 / 46, 0},
                   Window{"BlackmanWindow", 0.42, 0.5, 0.08}})
    for (int periodic : {0, 1}) {
      ModelBuilder mb(17);
      mb.initializer("size", HostTensor::scalar<int64_t>(9));
      ModelBuilder::setInt(mb.node(w.op, {"size"}, {"y"}), "periodic", periodic);
      mb.output("y");
      const HostTensor y = run(mb, {}).at("y").tensor;
      ASSERT_EQ(y.dims(), (std::vector<int64_t>{9}));
      for (int k = 0; k < 9; ++k) {
        double x = 2 * std::numbers::pi * k / (periodic ? 9 : 8);
        EXPECT_NEAR(y.data<float>()[k], w.a0 - w.a1 * std::cos(x) + w.a2 * std::cos(2 * x), 1e-6) << w.op << " " << k;
      }
    }
}

TEST(Signal, MelWeightMatrixHasOneTriangularFilterPerBin) {
  ModelBuilder mb(17);
  mb.initializer("bins", HostTensor::scalar<int64_t>(6)).initializer("n", HostTensor::scalar<int64_t>(64));
  mb.initializer("rate", HostTensor::scalar<int64_t>(16000));
  mb.initializer("low", HostTensor::scalar<float>(100)).initializer("high", HostTensor::scalar<float>(7000));
  mb.node("MelWeightMatrix", {"bins", "n", "rate", "low", "high"}, {"y"});
  mb.output("y");
  const HostTensor y = run(mb, {}).at("y").tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{33, 6}));
  for (int64_t m = 0; m < 6; ++m) {
    float peak = 0;
    for (int64_t k = 0; k < 33; ++k) {
      float v = y.data<float>()[k * 6 + m];
      EXPECT_GE(v, 0.0f);
      EXPECT_LE(v, 1.0f);
      peak = std::max(peak, v);
    }
    EXPECT_EQ(peak, 1.0f) << "filter " << m;
  }
}

// Boxes (corners y1, x1, y2, x2): A and B overlap (IoU 0.82), C stands apart, D scores below the
// threshold.
ModelBuilder nmsModel(bool centerPointBox, int64_t maxPerClass) {
  ModelBuilder mb(11);
  std::vector<float> corners{0, 0, 1, 1, 0.1f, 0, 1.1f, 1, 0, 2, 1, 3, 0, 5, 1, 6};
  std::vector<float> boxes = corners;
  if (centerPointBox)
    for (size_t b = 0; b < 4; ++b) {
      const float* c = &corners[b * 4];
      boxes[b * 4 + 0] = (c[1] + c[3]) / 2;
      boxes[b * 4 + 1] = (c[0] + c[2]) / 2;
      boxes[b * 4 + 2] = c[3] - c[1];
      boxes[b * 4 + 3] = c[2] - c[0];
    }
  mb.initializer("boxes", HostTensor::fromVector<float>({1, 4, 4}, boxes));
  mb.initializer("scores", HostTensor::fromVector<float>({1, 2, 4}, {0.9f, 0.8f, 0.7f, 0.1f, 0.3f, 0.95f, 0.6f, 0.1f}));
  mb.initializer("max", HostTensor::scalar<int64_t>(maxPerClass));
  mb.initializer("iou", HostTensor::scalar<float>(0.5f)).initializer("score", HostTensor::scalar<float>(0.2f));
  auto& node = mb.node("NonMaxSuppression", {"boxes", "scores", "max", "iou", "score"}, {"selected"});
  ModelBuilder::setInt(node, "center_point_box", centerPointBox);
  mb.output("selected");
  return mb;
}

std::vector<int64_t> selectedOf(const ModelBuilder& mb) {
  const HostTensor t = run(mb, {}).at("selected").tensor;
  return {t.data<int64_t>(), t.data<int64_t>() + t.elementCount()};
}

TEST(Detection, NonMaxSuppressionKeepsTheBestOfOverlappingBoxes) {
  std::vector<int64_t> expected{0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 1, 2};
  EXPECT_EQ(selectedOf(nmsModel(false, 10)), expected);
  EXPECT_EQ(selectedOf(nmsModel(true, 10)), expected);
  EXPECT_EQ(selectedOf(nmsModel(false, 1)), (std::vector<int64_t>{0, 0, 0, 0, 1, 1}));
}

HostTensor gridSample(const HostTensor& x, const std::vector<float>& grid, const std::string& mode,
                      const std::string& padding, int alignCorners) {
  ModelBuilder mb(16);
  mb.input("x", kFloat, x.dims());
  int64_t points = int64_t(grid.size() / 2);
  mb.initializer("grid", HostTensor::fromVector<float>({1, 1, points, 2}, grid));
  auto& node = mb.node("GridSample", {"x", "grid"}, {"y"}, "sample0");
  ModelBuilder::setString(node, "mode", mode);
  ModelBuilder::setString(node, "padding_mode", padding);
  ModelBuilder::setInt(node, "align_corners", alignCorners);
  mb.output("y");
  return run(mb, {{"x", x}}).at("y").tensor;
}

TEST(Sampling, GridSampleReadsPixelsAtTheirCentres) {
  auto x = randomFloats({1, 2, 3, 4}, 31);
  auto pixel = [&](int64_t c, int64_t h, int64_t w) { return x.data<float>()[(c * 3 + h) * 4 + w]; };
  // With align_corners the corners of the grid are the corner pixels' centres: (-1, -1) is
  // pixel (0, 0), (1, 1) pixel (2, 3), (-1/3, 0) pixel (1, 1).
  std::vector<float> grid{-1, -1, 1, 1, -1.0f / 3, 0};
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    HostTensor y = gridSample(x, grid, mode, "zeros", 1);
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 2, 1, 3}));
    for (int64_t c = 0; c < 2; ++c) {
      EXPECT_NEAR(y.data<float>()[c * 3 + 0], pixel(c, 0, 0), 1e-5) << mode;
      EXPECT_NEAR(y.data<float>()[c * 3 + 1], pixel(c, 2, 3), 1e-5) << mode;
      EXPECT_NEAR(y.data<float>()[c * 3 + 2], pixel(c, 1, 1), 1e-5) << mode;
    }
  }
  // Halfway between pixels (0, 0) and (0, 1): their mean.
  HostTensor mid = gridSample(x, {-2.0f / 3, -1}, "bilinear", "zeros", 1);
  EXPECT_NEAR(mid.data<float>()[0], (pixel(0, 0, 0) + pixel(0, 0, 1)) / 2, 1e-5);
}

TEST(Sampling, GridSamplePaddingModesOutsideTheImage) {
  auto x = randomFloats({1, 1, 3, 4}, 32);
  const float* px = x.data<float>();
  std::vector<float> farRight{3, 0};  // far right of the middle row
  EXPECT_EQ(gridSample(x, farRight, "bilinear", "zeros", 1).data<float>()[0], 0.0f);
  EXPECT_NEAR(gridSample(x, farRight, "bilinear", "border", 1).data<float>()[0], px[1 * 4 + 3], 1e-6);
  // x = 3 lands on column 6, which reflects about the last column (3) back to column 0.
  EXPECT_NEAR(gridSample(x, farRight, "nearest", "reflection", 1).data<float>()[0], px[1 * 4 + 0], 1e-6);
}

TEST(Sampling, GridSampleWithAnUnknownModeFailsNamingTheNode) {
  expectErrorNaming([] { gridSample(randomFloats({1, 1, 2, 2}, 33), {0, 0}, "trilinear", "zeros", 0); }, "sample0");
}

TEST(Text, TfIdfCountsSkipGrams) {
  ModelBuilder mb(9);
  mb.input("x", kInt64, {2, 6});
  // unigrams 1, 2; bigrams (1, 2), (2, 3)
  auto& node = mb.node("TfIdfVectorizer", {"x"}, {"y"});
  ModelBuilder::setString(node, "mode", "TFIDF");
  ModelBuilder::setInt(node, "min_gram_length", 1);
  ModelBuilder::setInt(node, "max_gram_length", 2);
  ModelBuilder::setInt(node, "max_skip_count", 1);
  ModelBuilder::setInts(node, "ngram_counts", {0, 2});
  ModelBuilder::setInts(node, "ngram_indexes", {3, 2, 1, 0});
  ModelBuilder::setInts(node, "pool_int64s", {1, 2, 1, 2, 2, 3});
  auto* weights = node.add_attribute();
  weights->set_name("weights");
  weights->set_type(onnx::AttributeProto::FLOATS);
  for (float w : {0.5f, 1.0f, 2.0f, 4.0f}) weights->add_floats(w);
  mb.output("y");
  std::vector<int64_t> tokens{1, 2, 3, 1, 5, 2, 2, 2, 2, 9, 9, 9};
  const HostTensor y = run(mb, {{"x", HostTensor::fromVector<int64_t>({2, 6}, tokens)}}).at("y").tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 4}));
  // Count each pool n-gram by brute force: a unigram at each position, a bigram at gaps 1 and 2.
  const std::vector<std::vector<int64_t>> grams{{1}, {2}, {1, 2}, {2, 3}};
  const std::vector<int64_t> slots{3, 2, 1, 0};
  const std::vector<float> weight{0.5f, 1.0f, 2.0f, 4.0f};
  for (int64_t row = 0; row < 2; ++row) {
    const int64_t* t = tokens.data() + row * 6;
    for (size_t g = 0; g < grams.size(); ++g) {
      int count = 0;
      for (int64_t i = 0; i < 6; ++i) {
        if (grams[g].size() == 1) count += t[i] == grams[g][0];
        else
          for (int64_t gap = 1; gap <= 2 && i + gap < 6; ++gap) count += t[i] == grams[g][0] && t[i + gap] == grams[g][1];
      }
      EXPECT_EQ(y.data<float>()[row * 4 + slots[g]], float(count) * weight[size_t(slots[g])]) << "row " << row << " gram " << g;
    }
  }
}

TEST(Text, StringNormalizerDropsStopwordsIgnoringCaseAndChangesCase) {
  ModelBuilder mb(10);
  mb.input("x", onnx::TensorProto::STRING, {4});
  auto& node = mb.node("StringNormalizer", {"x"}, {"y"});
  ModelBuilder::setString(node, "case_change_action", "UPPER");
  auto* stopwords = node.add_attribute();
  stopwords->set_name("stopwords");
  stopwords->set_type(onnx::AttributeProto::STRINGS);
  stopwords->add_strings("the");
  mb.output("y");
  auto x = HostTensor::fromVector<std::string>({4}, {"The", "quick", "THE", "Fox"});
  const HostTensor y = run(mb, {{"x", x}}).at("y").tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(y.data<std::string>()[0], "QUICK");
  EXPECT_EQ(y.data<std::string>()[1], "FOX");
}

TEST(Random, SeededDrawsRepeatAndStayInRange) {
  ModelBuilder mb(16);
  auto& uniform = mb.node("RandomUniform", {}, {"u"});
  ModelBuilder::setInts(uniform, "shape", {1000});
  ModelBuilder::setFloat(uniform, "low", -2);
  ModelBuilder::setFloat(uniform, "high", 3);
  ModelBuilder::setFloat(uniform, "seed", 7);
  auto& normal = mb.node("RandomNormal", {}, {"n"});
  ModelBuilder::setInts(normal, "shape", {4000});
  ModelBuilder::setFloat(normal, "mean", 1);
  ModelBuilder::setFloat(normal, "scale", 2);
  ModelBuilder::setFloat(normal, "seed", 8);
  mb.output("u").output("n");
  auto first = run(mb, {}), second = run(mb, {});
  const float* u = first.at("u").tensor.data<float>();
  for (int i = 0; i < 1000; ++i) {
    EXPECT_GE(u[i], -2.0f);
    EXPECT_LT(u[i], 3.0f);
    EXPECT_EQ(u[i], second.at("u").tensor.data<float>()[i]);
  }
  double sum = 0, squares = 0;
  for (int i = 0; i < 4000; ++i) {
    double v = first.at("n").tensor.data<float>()[i];
    sum += v;
    squares += v * v;
  }
  double mean = sum / 4000, variance = squares / 4000 - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.15);
  EXPECT_NEAR(std::sqrt(variance), 2.0, 0.15);
}

TEST(Random, CertainOutcomesAreExact) {
  ModelBuilder mb(16);
  mb.initializer("p", HostTensor::fromVector<float>({4}, {0, 1, 1, 0}));
  mb.initializer("logits", HostTensor::fromVector<float>({2, 3}, {0, 0, 60, 50, -50, -50}));
  mb.node("Bernoulli", {"p"}, {"b"});
  auto& multinomial = mb.node("Multinomial", {"logits"}, {"m"});
  ModelBuilder::setInt(multinomial, "sample_size", 5);
  ModelBuilder::setInt(multinomial, "dtype", onnx::TensorProto::INT64);
  mb.output("b").output("m");
  auto out = run(mb, {});
  const float* b = out.at("b").tensor.data<float>();
  EXPECT_EQ(std::vector<float>(b, b + 4), (std::vector<float>{0, 1, 1, 0}));
  const HostTensor& m = out.at("m").tensor;
  ASSERT_EQ(m.dims(), (std::vector<int64_t>{2, 5}));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(m.data<int64_t>()[i], 2);
    EXPECT_EQ(m.data<int64_t>()[5 + i], 0);
  }
}

}  // namespace
