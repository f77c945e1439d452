#pragma once
// How a calibration image becomes one sample of an image input: resized so that it covers the
// input's height and width (its shorter side, relative to the input's, fits), centre-cropped to
// them, scaled to [0, 1], normalised per RGB channel, laid out NCHW or NHWC.
#include "io/image_file.h"

#include <kiln/builder_config.h>
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <vector>

namespace kiln::calibration {

enum class ImageLayout { kNCHW, kNHWC };

// What an image input takes: its layout and sizes (batch 0 where dim 0 is dynamic and no profile
// gives it).
struct ImageInput {
  ImageLayout layout = ImageLayout::kNCHW;
  int64_t batch = 0, height = 0, width = 0;
};

// The image geometry of `input`: a float32 4-D tensor with 3 channels in dim 1 (NCHW) or dim 3
// (NHWC); dynamic dims come from the first profile's opt shape. Throws kiln::Error naming the
// input and its shape otherwise.
ImageInput imageInputOf(const Tensor& input, const std::vector<OptimizationProfile>& profiles);

// The image resized to cover height x width and centre-cropped: height * width * 3 values in
// [0, 1], RGB interleaved. The scale is max(height / h, width / w), the resized size rounded, the
// crop's offset round((resized - wanted) / 2) (torchvision's CenterCrop); each output value is a
// triangle-filter average of the source pixels around its centre, the filter widened by the
// shrink factor when shrinking (PIL's bilinear resize, torchvision's antialiased one), computed
// in float.
std::vector<float> resizeAndCrop(const RgbImage& image, int64_t height, int64_t width);

// Writes `image`, resized, cropped and normalised ((x - mean[c]) / std[c]), as sample `index` of
// `batch` (float32, [B, 3, H, W] or [B, H, W, 3] as `input` says).
void writeImageSample(const RgbImage& image, const ImageInput& input, const std::vector<float>& mean,
                      const std::vector<float>& std, HostTensor& batch, int64_t index);

}  // namespace kiln::calibration
