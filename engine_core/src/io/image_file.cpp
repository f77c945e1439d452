#include "io/image_file.h"

#include <kiln/error.h>
#include <kiln/file_io.h>

#include <png.h>
// jpeglib.h needs FILE and size_t declared first.
#include <cstdio>
#include <jpeglib.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstring>
#include <filesystem>

namespace kiln {
namespace {

[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "image " + path + " cannot be read: " + why +
                                               " (replace or remove the file)");
}

RgbImage decodePng(const std::vector<uint8_t>& bytes, const std::string& path) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) corrupt(path, image.message);
  // RGBA, then the alpha dropped: libpng would otherwise composite it onto a background.
  image.format = PNG_FORMAT_RGBA;
  std::vector<uint8_t> rgba(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, rgba.data(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    corrupt(path, why);
  }
  RgbImage rgb{int64_t(image.width), int64_t(image.height), {}};
  rgb.pixels.resize(size_t(rgb.width * rgb.height * 3));
  for (size_t p = 0, n = size_t(rgb.width * rgb.height); p < n; ++p)
    std::memcpy(&rgb.pixels[3 * p], &rgba[4 * p], 3);
  return rgb;
}

// libjpeg reports errors through a callback that must not return: it jumps back to decodeJpeg's
// setjmp with the message. Warnings (corrupt data libjpeg would paper over) are errors here too.
struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpegFail(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

void jpegMessage(j_common_ptr info, int level) {
  if (level < 0) jpegFail(info);  // a warning; trace messages (level >= 0) are ignored
}

// Only plain data lives in this frame across setjmp; `out` points into the caller's.
bool decodeJpegInto(const std::vector<uint8_t>& bytes, RgbImage* out, char* message) {
  jpeg_decompress_struct info;
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = jpegFail;
  errors.manager.emit_message = jpegMessage;
  if (setjmp(errors.jump)) {
    std::memcpy(message, errors.message, JMSG_LENGTH_MAX);
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  out->width = info.output_width;
  out->height = info.output_height;
  out->pixels.resize(size_t(out->width) * size_t(out->height) * 3);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = out->pixels.data() + size_t(info.output_scanline) * size_t(out->width) * 3;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

RgbImage decodeJpeg(const std::vector<uint8_t>& bytes, const std::string& path) {
  RgbImage image;
  char message[JMSG_LENGTH_MAX] = {};
  if (!decodeJpegInto(bytes, &image, message)) corrupt(path, std::string("corrupt JPEG data: ") + message);
  return image;
}

}  // namespace

bool isImageFileName(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return extension == ".png" || extension == ".jpg" || extension == ".jpeg";
}

RgbImage readImageFile(const std::string& path) {
  const std::vector<uint8_t> bytes = readFileBytes(path);
  static const uint8_t kPng[] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  static const uint8_t kJpeg[] = {0xFF, 0xD8, 0xFF};
  const auto startsWith = [&](const uint8_t* magic, size_t size) {
    return bytes.size() >= size && std::equal(magic, magic + size, bytes.begin());
  };
  RgbImage image;
  if (startsWith(kPng, sizeof kPng)) image = decodePng(bytes, path);
  else if (startsWith(kJpeg, sizeof kJpeg)) image = decodeJpeg(bytes, path);
  else corrupt(path, bytes.empty() ? "the file is empty" : "it is neither a PNG nor a JPEG file");
  if (image.width <= 0 || image.height <= 0) corrupt(path, "it has no pixels");
  return image;
}

}  // namespace kiln
