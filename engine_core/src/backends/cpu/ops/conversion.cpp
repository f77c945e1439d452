// CPU kernels of the conversion layers (ops/conversion.h). Copy between host memory is a plain
// copy (device backends run their own Copy steps). Cast is one too: kernels see values in their
// declared type, and the CPU step converts storage types on the way in and out. Reformat re-lays a
// 4-D tensor out between linear (NCHW) and channels-last (NHWC) order, element by element.
#include "../../../ops/conversion.h"
#include "../../../ops/fused.h"
#include "../../../ops/op_families.h"
#include "../../../ir/tensor_placement.h"
#include "../channels_last.h"
#include "../cpu_kernel.h"

#include <cstring>

namespace kiln {
namespace {

void copyKernel(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  HostTensor& y = ctx.allocateOutput(0, x.dtype(), x.dims());
  if (x.byteSize() && y.rawData() != x.rawData()) std::memcpy(y.rawData(), x.rawData(), x.byteSize());
}

void reformatKernel(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const auto from = parseTensorFormat(ctx.layer().attrString(conversion::kFrom));
  const auto to = parseTensorFormat(ctx.layer().attrString(conversion::kTo));
  if (!from || !to || x.rank() != 4 || x.dtype() == DataType::kString)
    ctx.fail("Reformat takes a 4-D numeric tensor and formats 'linear' or 'nhwc'");
  HostTensor& y = ctx.allocateOutput(0, x.dtype(), x.dims());
  if (*from == *to) {
    if (x.byteSize()) std::memcpy(y.rawData(), x.rawData(), x.byteSize());
    return;
  }
  const size_t element = byteSize(x.dtype());
  relayoutChannels(x.rawData(), y.rawData(), x.dim(0), x.dim(1), x.dim(2) * x.dim(3), element,
                   *to == TensorFormat::kNHWC);
}

}  // namespace

void registerConversionCpuKernels(CpuKernelRegistry& registry) {
  registry.add(fused::kDomain, conversion::kCopy, copyKernel);
  registry.add(fused::kDomain, conversion::kCast, copyKernel);
  registry.add(fused::kDomain, conversion::kReformat, reformatKernel);
}

}  // namespace kiln
