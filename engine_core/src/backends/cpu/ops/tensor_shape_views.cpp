// CPU kernels: views (Reshape, Flatten, Squeeze, Unsqueeze, Dropout share the input's storage),
// shape queries (Shape, Size) and generators (ConstantOfShape, Range, EyeLike).
#include "tensor_shape_kernels.h"

#include <algorithm>

namespace kiln::tensor_shape {
namespace {

// The schema computed the output shape from the (now known) inputs: reuse the input's storage.
void viewAsInferred(KernelContext& ctx) {
  ctx.setOutput(0, ctx.input(0).reshaped(ctx.inferredOutput(0).shape.knownDims()));
}

void shapeKernel(KernelContext& ctx) {
  const auto& dims = ctx.input(0).dims();
  auto [start, end] = shapeWindow(ctx.layer(), int64_t(dims.size()));
  ctx.setOutput(0, HostTensor::fromVector<int64_t>({end - start}, {dims.begin() + start, dims.begin() + end}));
}

void dropoutKernel(KernelContext& ctx) {
  // Training mode with a positive ratio would drop values at random: not an inference computation.
  bool training = ctx.opset() >= 12 && ctx.hasInput(2) && ctx.input(2).toInt64Vector().at(0) != 0;
  double ratio = ctx.opset() >= 12 && ctx.hasInput(1) ? ctx.input(1).toDoubleVector().at(0) : 0.5;
  if (training && ratio > 0)
    ctx.fail("training_mode is true with ratio " + std::to_string(ratio) +
             ", which drops values at random; Kiln runs inference only, so set training_mode false or ratio 0");
  const HostTensor& in = ctx.input(0);
  ctx.setOutput(0, in);
  if (!ctx.hasOutput(1)) return;
  HostTensor& mask = ctx.allocateOutput(1);  // nothing dropped: all true / all ones
  if (mask.dtype() == DataType::kBool) {
    std::fill_n(mask.data<bool>(), mask.elementCount(), true);
  } else {
    dispatchNumeric(mask.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::fill_n(mask.data<T>(), mask.elementCount(), kernels::fromFloat<T>(1.0f));
    });
  }
}

void constantOfShapeKernel(KernelContext& ctx) {
  if (!ctx.layer().hasAttr("value")) {  // float zeros
    ctx.allocateZeroedOutput(0);
    return;
  }
  HostTensor& out = ctx.allocateOutput(0);
  const HostTensor& value = ctx.layer().attrTensor("value");
  dispatchStorage(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(elementsAs<T>(out), out.elementCount(), elementsAs<T>(value)[0]);
  });
}

void rangeKernel(KernelContext& ctx) {
  HostTensor& out = ctx.allocateOutput(0);
  dispatchNumeric(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* y = out.data<T>();
    if constexpr (std::is_integral_v<T>) {
      int64_t start = ctx.input(0).toInt64Vector()[0], delta = ctx.input(2).toInt64Vector()[0];
      for (int64_t i = 0; i < out.elementCount(); ++i) y[i] = T(start + i * delta);
    } else {
      double start = ctx.input(0).toDoubleVector()[0], delta = ctx.input(2).toDoubleVector()[0];
      for (int64_t i = 0; i < out.elementCount(); ++i) y[i] = kernels::fromFloat<T>(float(start + double(i) * delta));
    }
  });
}

void eyeLikeKernel(KernelContext& ctx) {
  HostTensor& out = ctx.allocateZeroedOutput(0);
  int64_t rows = out.dim(0), cols = out.dim(1), k = ctx.layer().attrInt("k", 0);
  auto fillDiagonal = [&](auto one) {
    using T = decltype(one);
    T* y = out.data<T>();
    for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i) y[i * cols + i + k] = one;
  };
  if (out.dtype() == DataType::kBool) {
    fillDiagonal(true);
  } else {
    dispatchNumeric(out.dtype(), [&](auto tag) { fillDiagonal(kernels::fromFloat<decltype(tag)>(1.0f)); });
  }
}

}  // namespace

void registerViewKernels(CpuKernelRegistry& registry) {
  registry.add("Shape", shapeKernel);
  registry.add("Size", [](KernelContext& ctx) {
    ctx.setOutput(0, HostTensor::scalar<int64_t>(ctx.input(0).elementCount()));
  });
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) registry.add(op, viewAsInferred);
  registry.add("Dropout", dropoutKernel);
  registry.add("ConstantOfShape", constantOfShapeKernel);
  registry.add("Range", rangeKernel);
  registry.add("EyeLike", eyeLikeKernel);
}

}  // namespace kiln::tensor_shape
