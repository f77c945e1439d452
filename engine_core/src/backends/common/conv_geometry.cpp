#include "conv_geometry.h"

#include "../../ops/conv_pool_window.h"

namespace kiln {

kernels::ConvShape forwardConvShape(const Layer& layer, const std::vector<int64_t>& xDims,
                                    const std::vector<int64_t>& wDims) {
  const std::vector<int64_t> kernelDims(wDims.begin() + 2, wDims.end());
  WindowAttributes attrs = readWindowAttributes(layer, xDims.size() - 2, kernelDims);
  kernels::ConvShape shape;
  shape.batch = xDims[0];
  shape.inChannels = xDims[1];
  shape.outChannels = wDims[0];
  shape.group = layer.attrInt("group", 1);
  shape.window = makeSpatialWindow(layer, attrs, {xDims.begin() + 2, xDims.end()});
  return shape;
}

kernels::ConvShape transposeConvShape(const Layer& layer, const std::vector<int64_t>& xDims,
                                      const std::vector<int64_t>& wDims) {
  const size_t rank = xDims.size() - 2, first = size_t(kernels::kMaxSpatialRank) - rank;
  WindowAttributes attrs = readWindowAttributes(layer, rank, {wDims.begin() + 2, wDims.end()});
  kernels::ConvShape shape;
  shape.batch = xDims[0];
  shape.inChannels = xDims[1];
  shape.group = layer.attrInt("group", 1);
  shape.outChannels = wDims[1] * shape.group;
  kernels::SpatialWindow& win = shape.window;
  for (size_t i = 0; i < rank; ++i) {
    int64_t padBegin = 0;
    win.in[first + i] = convTransposeOutputDim(layer, attrs, i, Dim(xDims[i + 2]), &padBegin).value();
    win.out[first + i] = xDims[i + 2];
    win.kernel[first + i] = attrs.kernel[i];
    win.stride[first + i] = attrs.strides[i];
    win.dilation[first + i] = attrs.dilations[i];
    win.padBegin[first + i] = padBegin;
  }
  return shape;
}

kernels::RoiAlignParams roiAlignAttributes(const Layer& layer) {
  kernels::RoiAlignParams params;
  params.outputH = layer.attrInt("output_height", 1);
  params.outputW = layer.attrInt("output_width", 1);
  params.samplingRatio = layer.attrInt("sampling_ratio", 0);
  params.spatialScale = layer.attrFloat("spatial_scale", 1.0f);
  params.halfPixel = layer.attrString("coordinate_transformation_mode",
                                      layer.opsetVersion >= 16 ? "half_pixel" : "output_half_pixel") == "half_pixel";
  params.maxMode = layer.attrString("mode", "avg") == "max";
  return params;
}

}  // namespace kiln
