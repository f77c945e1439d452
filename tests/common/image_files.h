#pragma once
// PNG and JPEG files for the image-calibration tests, written with libpng and libjpeg-turbo (the
// libraries Kiln reads them with) and read back with libjpeg's own API for an independent decode.
#include "io/image_file.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::test {

// Random pixels with some structure (a gradient plus noise), so resizing has something to average.
RgbImage randomImage(int64_t width, int64_t height, uint32_t seed);

void writePng(const RgbImage& image, const std::string& path);
// An RGBA PNG of `image` with a random alpha channel (the reader must drop it).
void writeRgbaPng(const RgbImage& image, const std::string& path, uint32_t alphaSeed);
// A greyscale PNG of `grey` (width * height values).
void writeGreyPng(const std::vector<uint8_t>& grey, int64_t width, int64_t height, const std::string& path);
void writeJpeg(const RgbImage& image, const std::string& path, int quality = 90);

// A JPEG decoded to RGB with libjpeg directly (not through Kiln's reader).
RgbImage decodeJpegDirectly(const std::string& path);

}  // namespace kiln::test
