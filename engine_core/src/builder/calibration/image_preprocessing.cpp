#include "image_preprocessing.h"

#include <kiln/error.h>

#include <algorithm>
#include <cmath>

namespace kiln::calibration {
namespace {

// One axis of the resize: for each output position, the first source index it reads and the
// normalised weights from there (PIL's precompute_coeffs with the bilinear filter).
struct AxisWeights {
  std::vector<int64_t> first;
  std::vector<std::vector<float>> weights;
};

// Output positions offset .. offset + count - 1 of a resize from `in` to `out` samples.
AxisWeights axisWeights(int64_t in, int64_t out, int64_t offset, int64_t count) {
  const double scale = double(in) / double(out);  // source samples per output sample
  const double support = std::max(scale, 1.0);    // the triangle's half width, widened when shrinking
  AxisWeights axis;
  for (int64_t o = offset; o < offset + count; ++o) {
    const double centre = (double(o) + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(int64_t(centre - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(int64_t(centre + support + 0.5), in);
    std::vector<float> w;
    double total = 0;
    for (int64_t i = lo; i < hi; ++i) {
      const double t = std::max(0.0, 1.0 - std::fabs((double(i) - centre + 0.5) / support));
      w.push_back(float(t));
      total += t;
    }
    for (float& v : w) v = float(v / total);
    axis.first.push_back(lo);
    axis.weights.push_back(std::move(w));
  }
  return axis;
}

[[noreturn]] void notAnImage(const Tensor& input, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument,
              "calibration images: input '" + input.name + "' of shape " + input.shape.toString() + " (" +
                  std::string(toString(input.dtype)) + ") is not an image input: " + why +
                  "; give .npy files named by input instead");
}

}  // namespace

ImageInput imageInputOf(const Tensor& input, const std::vector<OptimizationProfile>& profiles) {
  if (input.dtype != DataType::kFloat32) notAnImage(input, "images fill float32 inputs");
  if (!input.shape.hasRank() || input.shape.rank() != 4)
    notAnImage(input, "images fill 4-D inputs, [N, 3, H, W] or [N, H, W, 3]");
  std::vector<int64_t> dims(4, 0);
  const ShapeRange* range = nullptr;
  if (!profiles.empty())
    if (auto it = profiles.front().inputs.find(input.name); it != profiles.front().inputs.end()) range = &it->second;
  for (size_t d = 0; d < 4; ++d)
    dims[d] = input.shape[d].isKnown() ? input.shape[d].value() : range && range->opt.size() == 4 ? range->opt[d] : 0;
  ImageInput image;
  if (dims[1] == 3) image = {ImageLayout::kNCHW, dims[0], dims[2], dims[3]};
  else if (dims[3] == 3) image = {ImageLayout::kNHWC, dims[0], dims[1], dims[2]};
  else notAnImage(input, "neither dim 1 (NCHW) nor dim 3 (NHWC) is 3 RGB channels");
  if (image.height <= 0 || image.width <= 0)
    notAnImage(input, "its height and width are dynamic; give an optimization profile whose opt shape sets them");
  return image;
}

std::vector<float> resizeAndCrop(const RgbImage& image, int64_t height, int64_t width) {
  const double scale = std::max(double(height) / double(image.height), double(width) / double(image.width));
  const int64_t resizedH = std::max(height, int64_t(std::llround(double(image.height) * scale)));
  const int64_t resizedW = std::max(width, int64_t(std::llround(double(image.width) * scale)));
  // Python's round(), as torchvision's CenterCrop: halves to even.
  const int64_t top = int64_t(std::nearbyint(double(resizedH - height) / 2.0));
  const int64_t left = int64_t(std::nearbyint(double(resizedW - width) / 2.0));
  const AxisWeights rows = axisWeights(image.height, resizedH, top, height);
  const AxisWeights columns = axisWeights(image.width, resizedW, left, width);

  // Horizontal pass over every source row, then the vertical one.
  std::vector<float> across(size_t(image.height * width * 3));
  for (int64_t y = 0; y < image.height; ++y)
    for (int64_t x = 0; x < width; ++x) {
      float sum[3] = {0, 0, 0};
      const auto& w = columns.weights[size_t(x)];
      const uint8_t* source = &image.pixels[size_t((y * image.width + columns.first[size_t(x)]) * 3)];
      for (size_t i = 0; i < w.size(); ++i)
        for (int c = 0; c < 3; ++c) sum[c] += w[i] * float(source[i * 3 + size_t(c)]);
      for (int c = 0; c < 3; ++c) across[size_t((y * width + x) * 3 + c)] = sum[c] / 255.0f;
    }
  std::vector<float> out(size_t(height * width * 3));
  for (int64_t y = 0; y < height; ++y) {
    const auto& w = rows.weights[size_t(y)];
    for (int64_t x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) {
        float sum = 0;
        for (size_t i = 0; i < w.size(); ++i)
          sum += w[i] * across[size_t(((rows.first[size_t(y)] + int64_t(i)) * width + x) * 3 + c)];
        out[size_t((y * width + x) * 3 + c)] = sum;
      }
  }
  return out;
}

void writeImageSample(const RgbImage& image, const ImageInput& input, const std::vector<float>& mean,
                      const std::vector<float>& std, HostTensor& batch, int64_t index) {
  const std::vector<float> rgb = resizeAndCrop(image, input.height, input.width);
  const int64_t plane = input.height * input.width;
  float* sample = batch.data<float>() + index * plane * 3;
  for (int64_t p = 0; p < plane; ++p)
    for (int64_t c = 0; c < 3; ++c) {
      const float value = (rgb[size_t(p * 3 + c)] - mean[size_t(c)]) / std[size_t(c)];
      if (input.layout == ImageLayout::kNCHW) sample[c * plane + p] = value;
      else sample[p * 3 + c] = value;
    }
}

}  // namespace kiln::calibration
