#include "cuda_epilogue.h"

#include "../../ops/fused.h"

#include <kernels/cuda/elementwise/binary.h>
#include <kernels/cuda/elementwise/unary.h>

#include <kiln/error.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;
using kernels::Activation;

}  // namespace

ElementwiseEpilogue::ElementwiseEpilogue(const Layer& layer, DataType storage, CudaDevice& device)
    : layer_(layer), storage_(storage), type_(k::ElementType::kFloat32) {
  const auto type = elementTypeOf(storage);
  if (!type || (storage != DataType::kFloat32 && storage != DataType::kFloat16 && storage != DataType::kBFloat16))
    throw Error(ErrorCode::kUnsupported, layer.describe() +
                                             ": the CUDA epilogue takes float32, float16 or bfloat16, not " +
                                             std::string(toString(storage)));
  type_ = *type;
  if (layer.domain == fused::kDomain) epilogue_ = readFusedEpilogue(layer);
  if (epilogue_.activation == Activation::kClip) {
    clipLow_ = deviceScalar(device.allocator, epilogue_.alpha, storage);
    clipHigh_ = deviceScalar(device.allocator, epilogue_.beta, storage);
  }
}

uint64_t ElementwiseEpilogue::scratchBytes(const FusedEpilogue& epilogue, int64_t elements, DataType storage) {
  return epilogue.activation == Activation::kSiLU ? uint64_t(elements) * byteSize(storage) : 0;
}

void ElementwiseEpilogue::check(cudaError_t status, const char* what) const {
  if (status != cudaSuccess) cuda::check(status, layer_.describe() + ": " + what);
}

void ElementwiseEpilogue::apply(void* y, const std::vector<int64_t>& dims, const Work& work, void* scratch,
                                cudaStream_t stream) const {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  if (count == 0) return;
  const auto add = [&](const void* other, const std::vector<int64_t>& otherDims, const char* what) {
    check(k::launchBinary(kernels::BinaryOp::kAdd, y, dims, other, otherDims, y, dims, type_, stream), what);
  };
  if (work.bias) add(work.bias, work.biasDims, "adding its bias");
  if (work.residualBefore) add(work.residualBefore, dims, "adding its residual");
  if (work.activate) {
    kernels::UnaryParams params;
    params.alpha = epilogue_.alpha;
    params.beta = epilogue_.beta;
    const auto unary = [&](kernels::UnaryOp op, void* out) {
      check(k::launchUnary(op, y, out, count, type_, params, stream), "applying its activation");
    };
    switch (epilogue_.activation) {
      case Activation::kNone:
        break;
      case Activation::kRelu:
        unary(kernels::UnaryOp::kRelu, y);
        break;
      case Activation::kClip:
        check(k::launchClip(y, y, count, type_, clipLow_.get(), clipHigh_.get(), stream), "applying its activation");
        break;
      case Activation::kSigmoid:
        unary(kernels::UnaryOp::kSigmoid, y);
        break;
      case Activation::kHardSigmoid:
        unary(kernels::UnaryOp::kHardSigmoid, y);
        break;
      case Activation::kHardSwish:
        unary(kernels::UnaryOp::kHardSwish, y);
        break;
      case Activation::kSiLU:  // x * sigmoid(x), the sigmoid in the scratch
        unary(kernels::UnaryOp::kSigmoid, scratch);
        check(k::launchBinary(kernels::BinaryOp::kMul, y, dims, scratch, dims, y, dims, type_, stream),
              "applying its activation");
        break;
      case Activation::kGelu:
        unary(kernels::UnaryOp::kGelu, y);
        break;
      case Activation::kGeluTanh:
        unary(kernels::UnaryOp::kGeluTanh, y);
        break;
      case Activation::kLeakyRelu:
        unary(kernels::UnaryOp::kLeakyRelu, y);
        break;
      case Activation::kTanh:
        unary(kernels::UnaryOp::kTanh, y);
        break;
    }
  }
  if (work.residualAfter) add(work.residualAfter, dims, "adding its residual");
}

}  // namespace kiln::cuda
