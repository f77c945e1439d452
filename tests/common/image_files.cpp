#include "common/image_files.h"

#include <png.h>
#include <cstdio>
#include <jpeglib.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

namespace kiln::test {

RgbImage randomImage(int64_t width, int64_t height, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(-40, 40);
  RgbImage image{width, height, std::vector<uint8_t>(size_t(width * height * 3))};
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) {
        const int base = c == 0 ? int(200 * x / width) : c == 1 ? int(200 * y / height) : 120;
        image.pixels[size_t((y * width + x) * 3 + c)] = uint8_t(std::clamp(base + noise(rng) + 20, 0, 255));
      }
  return image;
}

namespace {

void writePngFormat(const std::string& path, int64_t width, int64_t height, uint32_t format, const uint8_t* pixels) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(width);
  image.height = png_uint_32(height);
  image.format = format;
  if (!png_image_write_to_file(&image, path.c_str(), 0, pixels, 0, nullptr))
    throw std::runtime_error("cannot write " + path + ": " + image.message);
}

}  // namespace

void writePng(const RgbImage& image, const std::string& path) {
  writePngFormat(path, image.width, image.height, PNG_FORMAT_RGB, image.pixels.data());
}

void writeRgbaPng(const RgbImage& image, const std::string& path, uint32_t alphaSeed) {
  std::mt19937 rng(alphaSeed);
  std::vector<uint8_t> rgba(size_t(image.width * image.height * 4));
  for (size_t p = 0; p < size_t(image.width * image.height); ++p) {
    for (int c = 0; c < 3; ++c) rgba[4 * p + size_t(c)] = image.pixels[3 * p + size_t(c)];
    rgba[4 * p + 3] = uint8_t(rng() % 256);
  }
  writePngFormat(path, image.width, image.height, PNG_FORMAT_RGBA, rgba.data());
}

void writeGreyPng(const std::vector<uint8_t>& grey, int64_t width, int64_t height, const std::string& path) {
  writePngFormat(path, width, height, PNG_FORMAT_GRAY, grey.data());
}

void writeJpeg(const RgbImage& image, const std::string& path, int quality) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) throw std::runtime_error("cannot write " + path);
  jpeg_compress_struct info;
  jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, file);
  info.image_width = JDIMENSION(image.width);
  info.image_height = JDIMENSION(image.height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(&image.pixels[size_t(info.next_scanline) * size_t(image.width) * 3]);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::fclose(file);
}

RgbImage decodeJpegDirectly(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw std::runtime_error("cannot read " + path);
  jpeg_decompress_struct info;
  jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors);
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, file);
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  RgbImage image{info.output_width, info.output_height, {}};
  image.pixels.resize(size_t(image.width * image.height * 3));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = &image.pixels[size_t(info.output_scanline) * size_t(image.width) * 3];
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  std::fclose(file);
  return image;
}

}  // namespace kiln::test
