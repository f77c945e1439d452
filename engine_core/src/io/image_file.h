#pragma once
// PNG and JPEG images read into 8-bit RGB, with Debian's libpng (simplified API) and libjpeg-turbo:
// the calibration images of INT8 builds.
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// Rows top to bottom, each pixel R, G, B.
struct RgbImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> pixels;  // height * width * 3
};

// True for names ending in .png, .jpg or .jpeg (any case).
bool isImageFileName(const std::string& path);

// Decodes a PNG or JPEG file (told apart by its first bytes, not its name). Grey, palette and
// 16-bit PNGs become 8-bit RGB as libpng's simplified API reads them; an alpha channel is dropped
// (as PIL's convert("RGB")); grey JPEGs are expanded. Throws kiln::Error naming the file: missing,
// neither PNG nor JPEG, or corrupt (a JPEG warning, such as premature end of data, counts as corrupt).
RgbImage readImageFile(const std::string& path);

}  // namespace kiln
