// PNG and JPEG calibration images read into 8-bit RGB: PNGs exactly (an alpha channel dropped, grey
// expanded), JPEGs as libjpeg decodes them and close to what was encoded; a truncated, empty or
// mislabelled file is one error naming it.
#include <kiln/error.h>

#include "common/image_files.h"
#include "io/image_file.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

class ImageFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_images_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // The message readImageFile throws for `file`.
  std::string failure(const std::string& file) {
    try {
      readImageFile(file);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error for " << file;
    return "";
  }
  fs::path dir_;
};

}  // namespace

TEST_F(ImageFile, PngReadsBackExactlyAndDropsAlpha) {
  const RgbImage image = test::randomImage(37, 23, 5);
  test::writePng(image, path("a.png"));
  const RgbImage read = readImageFile(path("a.png"));
  EXPECT_EQ(read.width, 37);
  EXPECT_EQ(read.height, 23);
  EXPECT_EQ(read.pixels, image.pixels);

  test::writeRgbaPng(image, path("b.PNG"), 9);
  EXPECT_EQ(readImageFile(path("b.PNG")).pixels, image.pixels);

  // Grey becomes R = G = B.
  std::vector<uint8_t> grey(image.pixels.begin(), image.pixels.begin() + 37 * 23);
  test::writeGreyPng(grey, 37, 23, path("g.png"));
  const RgbImage greyRead = readImageFile(path("g.png"));
  ASSERT_EQ(greyRead.pixels.size(), grey.size() * 3);
  for (size_t p = 0; p < grey.size(); ++p)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(greyRead.pixels[3 * p + size_t(c)], grey[p]) << p;
}

TEST_F(ImageFile, JpegMatchesLibjpegsOwnDecodeAndIsCloseToTheSource) {
  const RgbImage image = test::randomImage(41, 30, 6);
  test::writeJpeg(image, path("c.jpg"), 95);
  const RgbImage read = readImageFile(path("c.jpg"));
  ASSERT_EQ(read.width, 41);
  ASSERT_EQ(read.height, 30);
  EXPECT_EQ(read.pixels, test::decodeJpegDirectly(path("c.jpg")).pixels);
  // Lossy (the noise and the chroma subsampling cost a few levels a pixel), but each channel's
  // mean survives: really this image, decoded.
  double meanError = 0, channelSum[3] = {0, 0, 0};
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    meanError += std::abs(int(read.pixels[i]) - int(image.pixels[i]));
    channelSum[i % 3] += int(read.pixels[i]) - int(image.pixels[i]);
  }
  meanError /= double(image.pixels.size());
  EXPECT_GT(meanError, 0.0);
  EXPECT_LT(meanError, 25.0);
  for (double sum : channelSum) EXPECT_LT(std::fabs(sum / double(image.pixels.size() / 3)), 2.0);
}

TEST_F(ImageFile, BadFilesAreOneErrorNamingThem) {
  const RgbImage image = test::randomImage(32, 32, 7);
  test::writeJpeg(image, path("whole.jpg"));
  test::writePng(image, path("whole.png"));
  for (const char* name : {"whole.jpg", "whole.png"}) {
    std::ifstream in(path(name), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(path(std::string("cut_") + name), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  const std::string jpeg = failure(path("cut_whole.jpg"));
  EXPECT_NE(jpeg.find("cut_whole.jpg cannot be read: corrupt JPEG data"), std::string::npos) << jpeg;
  const std::string png = failure(path("cut_whole.png"));
  EXPECT_NE(png.find("cut_whole.png cannot be read"), std::string::npos) << png;
  std::ofstream(path("notes.png")) << "not an image";
  EXPECT_NE(failure(path("notes.png")).find("notes.png cannot be read: it is neither a PNG nor a JPEG file"),
            std::string::npos);
  std::ofstream(path("empty.jpg")).close();
  EXPECT_NE(failure(path("empty.jpg")).find("the file is empty"), std::string::npos);
  EXPECT_TRUE(isImageFileName("x/a.JPEG"));
  EXPECT_FALSE(isImageFileName("x/a.npy"));
}
