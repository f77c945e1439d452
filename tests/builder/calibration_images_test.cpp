// INT8 calibration from a folder of PNG / JPEG images: the resize (cover, centre crop, triangle
// filter widened when shrinking) against a direct two-dimensional sum with hand-worked geometry;
// the batches' values (NCHW and NHWC, mean/std, batch dim fixed or from the profile) against the
// same computation on the pixels written (PNG) or libjpeg's own decode (JPEG); one clear error for
// each way a folder or model does not fit; and an INT8 build calibrated from images end to end.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/npy.h>
#include <kiln/onnx_importer.h>
#include <kiln/runtime.h>

#include "builder/calibration/calibration_images.h"
#include "builder/calibration/image_preprocessing.h"
#include "common/image_files.h"
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace kiln;
using namespace kiln::calibration;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;
namespace fs = std::filesystem;

namespace {

// How an image maps onto the crop, worked out by hand for each case.
struct Geometry {
  int64_t resizedHeight, resizedWidth, top, left;
};

// Triangle weights of source samples 0..in-1 for resized position u, over a direct sum (no window).
std::vector<double> weightsAt(int64_t in, int64_t resized, int64_t u) {
  const double centre = (double(u) + 0.5) * double(in) / double(resized);
  const double support = std::max(double(in) / double(resized), 1.0);
  std::vector<double> w(static_cast<size_t>(in));
  double total = 0;
  for (int64_t i = 0; i < in; ++i) {
    w[size_t(i)] = std::max(0.0, 1.0 - std::fabs(double(i) + 0.5 - centre) / support);
    total += w[size_t(i)];
  }
  for (double& v : w) v /= total;
  return w;
}

// The crop's RGB values in [0, 1], every output value a sum over the whole image.
std::vector<double> directResize(const RgbImage& image, int64_t height, int64_t width, const Geometry& g) {
  std::vector<double> out(size_t(height * width * 3));
  for (int64_t y = 0; y < height; ++y) {
    const auto wy = weightsAt(image.height, g.resizedHeight, y + g.top);
    for (int64_t x = 0; x < width; ++x) {
      const auto wx = weightsAt(image.width, g.resizedWidth, x + g.left);
      for (int c = 0; c < 3; ++c) {
        double sum = 0;
        for (int64_t j = 0; j < image.height; ++j)
          for (int64_t i = 0; i < image.width && wy[size_t(j)] > 0; ++i)
            sum += wy[size_t(j)] * wx[size_t(i)] * image.pixels[size_t((j * image.width + i) * 3 + c)];
        out[size_t((y * width + x) * 3 + c)] = sum / 255.0;
      }
    }
  }
  return out;
}

void expectNear(const std::vector<float>& actual, const std::vector<double>& expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  double worst = 0;
  for (size_t i = 0; i < actual.size(); ++i) worst = std::max(worst, std::fabs(double(actual[i]) - expected[i]));
  EXPECT_LT(worst, tolerance);
}

Network imageInput(const std::string& name, DataType dtype, Shape shape) {
  Network n;
  n.addInput(name, dtype, std::move(shape));
  return n;
}

class CalibrationImages : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_calib_images_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "images");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string folder() const { return (dir_ / "images").string(); }
  std::string file(const std::string& name) const { return (dir_ / "images" / name).string(); }
  BuilderConfig config() const {
    BuilderConfig c;
    c.allowINT8 = true;
    c.calibration.dataPath = folder();
    return c;
  }
  // The message loading the folder for `network` throws (the test fails when none is thrown).
  std::string failure(const Network& network, const BuilderConfig& c) {
    try {
      if (calibrationDataKind(c.calibration.dataPath) == CalibrationDataKind::kImages)
        loadCalibrationImages(network, c, [](double, const std::string&) {});
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }
  fs::path dir_;
};

}  // namespace

TEST(ImageResize, MatchesADirectTriangleFilterSumWhenShrinkingGrowingAndCropping) {
  struct Case {
    int64_t width, height, outHeight, outWidth;
    Geometry geometry;
  };
  const Case cases[] = {
      {40, 20, 16, 16, {16, 32, 0, 8}},    // scale 0.8: the width is cropped 8 on each side
      {7, 9, 12, 10, {13, 10, 0, 0}},      // scale 10/7 up: 12.86 rounds to 13 rows, offset round(0.5) = 0
      {300, 200, 24, 32, {24, 36, 0, 2}},  // scale 0.12: the triangle reaches 8.3 source pixels each way
      {9, 30, 12, 12, {40, 12, 14, 0}},    // scale 4/3 up: 40 x 12, 14 rows cropped above and below
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.width) + "x" + std::to_string(c.height));
    const RgbImage image = test::randomImage(c.width, c.height, uint32_t(c.width * 31 + c.height));
    expectNear(resizeAndCrop(image, c.outHeight, c.outWidth),
               directResize(image, c.outHeight, c.outWidth, c.geometry), 2e-5);
  }
  // An image of the input's size passes through unchanged.
  const RgbImage same = test::randomImage(16, 12, 3);
  std::vector<double> scaled(same.pixels.begin(), same.pixels.end());
  for (double& v : scaled) v /= 255.0;
  expectNear(resizeAndCrop(same, 12, 16), scaled, 1e-6);
}

TEST_F(CalibrationImages, BatchesHoldTheNormalisedCropsInNchwAndNhwc) {
  // Five images of different sizes and kinds, in name order: a.png, b.jpg, c.png, d.jpeg, e.png.
  const std::vector<std::pair<std::string, RgbImage>> written = {
      {"a.png", test::randomImage(40, 30, 1)}, {"b.jpg", test::randomImage(20, 24, 2)},
      {"c.png", test::randomImage(16, 16, 3)}, {"d.jpeg", test::randomImage(50, 17, 4)},
      {"e.png", test::randomImage(12, 30, 5)}};
  std::vector<RgbImage> decoded;  // what the reader must see: PNG pixels exactly, JPEG as libjpeg decodes
  for (const auto& [name, image] : written) {
    if (name.ends_with(".png")) test::writePng(image, file(name));
    else test::writeJpeg(image, file(name));
    decoded.push_back(name.ends_with(".png") ? image : test::decodeJpegDirectly(file(name)));
  }
  std::ofstream(file("README.txt")) << "other files are left alone";
  ASSERT_EQ(calibrationDataKind(folder()), CalibrationDataKind::kImages);
  const std::vector<float> mean = {0.5f, 0.4f, 0.3f}, stdev = {0.2f, 0.25f, 0.3f};
  // The expected value of channel c at (y, x) of image k, normalised.
  const auto expected = [&](size_t k, int64_t h, int64_t w) {
    std::vector<float> rgb = resizeAndCrop(decoded[k], h, w);
    for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = (rgb[i] - mean[i % 3]) / stdev[i % 3];
    return rgb;
  };

  // NCHW, fixed batch 2: two batches, the fifth image left out.
  BuilderConfig nchw = config();
  nchw.calibration.imageMean = mean;
  nchw.calibration.imageStd = stdev;
  std::vector<std::string> seen;
  const auto batches = loadCalibrationImages(imageInput("pixel_values", DataType::kFloat32, Shape({2, 3, 14, 18})), nchw,
                                             [&](double, const std::string& detail) { seen.push_back(detail); });
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(seen.front(), "image 1/4: a.png");
  EXPECT_EQ(seen.back(), "image 4/4: d.jpeg");
  for (size_t k = 0; k < 4; ++k) {
    const HostTensor& t = batches[k / 2].at("pixel_values");
    ASSERT_EQ(t.dims(), (std::vector<int64_t>{2, 3, 14, 18}));
    const std::vector<float> want = expected(k, 14, 18);
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t p = 0; p < 14 * 18; ++p)
        ASSERT_NEAR(t.data<float>()[((int64_t(k % 2) * 3 + c) * 14 * 18) + p], want[size_t(p * 3 + c)], 1e-6)
            << "image " << k << " channel " << c << " pixel " << p;
  }

  // NHWC with a dynamic batch: the profile's opt batch (3), the last batch short; --calib-batches 1.
  BuilderConfig nhwc = config();
  nhwc.calibration.imageMean = mean;
  nhwc.calibration.imageStd = stdev;
  nhwc.profiles.push_back({{{"x", {{1, 10, 12, 3}, {3, 10, 12, 3}, {4, 10, 12, 3}}}}});
  const Network dynamic = imageInput("x", DataType::kFloat32, Shape({Dim::symbol("N"), 10, 12, 3}));
  const auto rows = loadCalibrationImages(dynamic, nhwc, [](double, const std::string&) {});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("x").dims(), (std::vector<int64_t>{3, 10, 12, 3}));
  EXPECT_EQ(rows[1].at("x").dims(), (std::vector<int64_t>{2, 10, 12, 3}));
  const std::vector<float> last = expected(4, 10, 12);
  const HostTensor& t = rows[1].at("x");
  for (size_t i = 0; i < last.size(); ++i) ASSERT_NEAR(t.data<float>()[10 * 12 * 3 + int64_t(i)], last[i], 1e-6) << i;
  nhwc.calibration.maxBatches = 1;
  EXPECT_EQ(loadCalibrationImages(dynamic, nhwc, [](double, const std::string&) {}).size(), 1u);
}

TEST_F(CalibrationImages, EachMisfitIsOneErrorNamingIt) {
  const Network rgb = imageInput("x", DataType::kFloat32, Shape({1, 3, 8, 8}));
  EXPECT_NE(failure(rgb, config()).find("images holds no .npy files and no PNG / JPEG images"), std::string::npos);

  test::writePng(test::randomImage(10, 10, 1), file("a.png"));
  std::ofstream(file("b.jpg")) << "broken";
  EXPECT_NE(failure(rgb, config()).find("b.jpg cannot be read: it is neither a PNG nor a JPEG file"), std::string::npos);
  fs::remove(file("b.jpg"));

  Network two = imageInput("x", DataType::kFloat32, Shape({1, 3, 8, 8}));
  two.addInput("mask", DataType::kFloat32, Shape({1, 8}));
  EXPECT_NE(failure(two, config()).find("the model has 2 inputs ('x', 'mask') but images fill one image input"),
            std::string::npos);
  EXPECT_NE(failure(imageInput("tokens", DataType::kFloat32, Shape({1, 16})), config())
                .find("input 'tokens' of shape [1,16] (float32) is not an image input: images fill 4-D inputs"),
            std::string::npos);
  EXPECT_NE(failure(imageInput("x", DataType::kFloat32, Shape({1, 4, 8, 8})), config())
                .find("neither dim 1 (NCHW) nor dim 3 (NHWC) is 3 RGB channels"),
            std::string::npos);
  EXPECT_NE(failure(imageInput("x", DataType::kUInt8, Shape({1, 3, 8, 8})), config()).find("images fill float32 inputs"),
            std::string::npos);
  EXPECT_NE(failure(imageInput("x", DataType::kFloat32, Shape({1, 3, Dim::symbol("H"), Dim::symbol("W")})), config())
                .find("its height and width are dynamic; give an optimization profile"),
            std::string::npos);
  EXPECT_NE(failure(imageInput("x", DataType::kFloat32, Shape({4, 3, 8, 8})), config())
                .find("has 1 image(s) but input 'x' takes batches of 4; give at least 4"),
            std::string::npos);
  BuilderConfig badStd = config();
  badStd.calibration.imageStd = {0.2f, 0.0f, 0.2f};
  EXPECT_NE(failure(rgb, badStd).find("every std must be above 0"), std::string::npos);

  writeNpyFile(test::randomFloats({1, 3, 8, 8}, 1), file("x.npy"));
  try {
    calibrationDataKind(folder());
    ADD_FAILURE() << "no error for a folder of both kinds";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds both .npy files and images"), std::string::npos) << e.what();
  }
}

TEST_F(CalibrationImages, AnInt8BuildCalibratesFromImagesAndStaysCloseToFp32) {
  // x [N, 3, 20, 20] -> Conv 3x3 + Relu -> Conv 3x3 stride 2 -> GlobalAveragePool -> Flatten -> Gemm -> y [N, 4].
  ModelBuilder mb;
  mb.symbolicInput("x", kFloat, {"N", "3", "20", "20"})
      .initializer("w1", test::randomFloats({8, 3, 3, 3}, 11, -0.5f, 0.5f))
      .initializer("b1", test::randomFloats({8}, 12))
      .initializer("w2", test::randomFloats({8, 8, 3, 3}, 13, -0.3f, 0.3f))
      .initializer("wg", test::randomFloats({4, 8}, 14))
      .initializer("cg", test::randomFloats({4}, 15))
      .output("y");
  ModelBuilder::setInts(mb.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"}, "relu1");
  ModelBuilder::setInts(mb.node("Conv", {"r1", "w2"}, {"c2"}, "conv2"), "strides", {2, 2});
  mb.node("GlobalAveragePool", {"c2"}, {"g"}, "pool");
  mb.node("Flatten", {"g"}, {"f"}, "flatten");
  ModelBuilder::setInt(mb.node("Gemm", {"f", "wg", "cg"}, {"y"}, "gemm"), "transB", 1);
  auto network = OnnxImporter().importBytes(mb.bytes());

  for (int k = 0; k < 6; ++k) {
    const RgbImage image = test::randomImage(24 + 7 * k, 20 + 5 * k, uint32_t(100 + k));
    if (k % 2) test::writeJpeg(image, file("calib_" + std::to_string(k) + ".jpg"));
    else test::writePng(image, file("calib_" + std::to_string(k) + ".png"));
  }
  BuilderConfig config = this->config();
  config.calibration.calibrator = CalibratorKind::kMinMax;
  config.profiles.push_back({{{"x", {{1, 3, 20, 20}, {2, 3, 20, 20}, {4, 3, 20, 20}}}}});
  const BuildResult built = Builder().build(*network, config);
  EXPECT_EQ(built.report.calibration.source, "data");
  EXPECT_EQ(built.report.calibration.batches, 3);  // six images in batches of the opt batch, 2
  int int8Layers = 0;
  for (const auto& layer : built.report.layers) int8Layers += layer.precision == "int8";
  EXPECT_EQ(int8Layers, 3);

  // Held-out images, preprocessed the same way, through the int8 and an fp32 engine.
  ImageInput input{ImageLayout::kNCHW, 4, 20, 20};
  HostTensor heldOut(DataType::kFloat32, {4, 3, 20, 20});
  for (int64_t k = 0; k < 4; ++k)
    writeImageSample(test::randomImage(30 + int(k), 26, uint32_t(500 + k)), input, config.calibration.imageMean,
                     config.calibration.imageStd, heldOut, k);
  BuilderConfig fp32;
  fp32.profiles = config.profiles;
  const HostTensor expected =
      Runtime().load(Builder().build(*network, fp32).plan)->createExecutionContext()->run({{"x", heldOut}}).at("y");
  const HostTensor actual = Runtime().load(built.plan)->createExecutionContext()->run({{"x", heldOut}}).at("y");
  double dot = 0, a2 = 0, e2 = 0, maxAbs = 0;
  for (int64_t i = 0; i < expected.elementCount(); ++i) {
    const double a = actual.data<float>()[i], e = expected.data<float>()[i];
    dot += a * e, a2 += a * a, e2 += e * e, maxAbs = std::max(maxAbs, std::fabs(a - e));
  }
  EXPECT_GT(maxAbs, 0.0);  // really quantized
  EXPECT_GT(dot / std::sqrt(a2 * e2), 0.99);
}
