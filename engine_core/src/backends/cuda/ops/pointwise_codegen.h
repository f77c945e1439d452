#pragma once
// CUDA C++ source of one kernel for a kiln.Pointwise body (passes/fuse_pointwise.cpp), for NVRTC:
// every output element computed in fp32 from its inputs' elements, with the per-element math of
// kernels/cuda/elementwise (unary_ops.h, binary_ops.h: the same formulas, NaN rules and
// constants), so the fused kernel agrees with the op-by-op steps. Storage types float32,
// float16, bfloat16 and bool (read as 0/1); other types, and ops it does not know, are refused
// with the reason. The source needs no header (not even cuda_fp16.h, which NVRTC 13 does not
// ship built in): conversions are inline PTX / bit arithmetic.
//
// The module holds three kernels taking one PointwiseKernelParams (below, by value):
//   kiln_pointwise_packed   every input dense (same memory order as the output), scalar, or
//                           per-channel (varies only along the last and first iteration axes:
//                           NHWC's [N,C,1,1] scale); PointwiseKernel::pack elements a thread (16
//                           bytes of the narrowest type, at most 8), a scalar tail
//   kiln_pointwise_general32 / general64   any broadcast: per-axis coordinates over the output's
//                           memory-order dims (rank <= 8), 32- or 64-bit index math
#include <kiln/network.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

constexpr size_t kPointwiseMaxInputs = 16;  // the kernel's pointer inputs (params stay < 4 KiB)
constexpr size_t kPointwiseMaxRank = 8;

// One pointer input of the kernel: a layer input, or a body constant too big for a literal.
struct PointwiseKernelInput {
  std::optional<size_t> layerInput;      // index into the layer's inputs
  const HostTensor* constant = nullptr;  // else this body constant (uploaded by the step)
  DataType storage = DataType::kUndefined;
};

struct PointwiseKernel {
  std::string source;
  std::vector<PointwiseKernelInput> inputs;
  DataType outputStorage = DataType::kUndefined;
  int pack = 4;  // elements per thread in the packed kernel
};

struct PointwiseCodegen {
  std::optional<PointwiseKernel> kernel;
  std::string refusal;  // why not, when no kernel: "its body's Mod (node 'm') ..."
};

// The kernel for a typed body (the step's storage types on every tensor, shapes inferred as far
// as known). One-element constants become exact literals; bigger ones kernel inputs.
PointwiseCodegen generatePointwiseKernel(const Network& body);

// The kernels' names in the module.
constexpr const char* kPointwisePackedKernel = "kiln_pointwise_packed";
constexpr const char* kPointwiseGeneral32Kernel = "kiln_pointwise_general32";
constexpr const char* kPointwiseGeneral64Kernel = "kiln_pointwise_general64";

// The kernels' one parameter, as the host lays it out: int64 words, in this order
//   in[K] (pointers), out, n, rank, dims[8], strides[K][8], mode[K], batchStride[K], channels,
//   imageSize
// (modes: 0 dense, 1 scalar, 2 per channel). `K` is the kernel's input count.
struct PointwiseLaunchParams {
  std::vector<const void*> inputs;
  void* output = nullptr;
  int64_t count = 0;
  std::vector<int64_t> dims;                  // iteration (output memory order) dims
  std::vector<std::vector<int64_t>> strides;  // per input, element strides over `dims`
  std::vector<int64_t> modes, batchStrides;   // packed kernel only
  int64_t channels = 0, imageSize = 0;
};
enum PointwiseInputMode : int64_t { kPointwiseDense = 0, kPointwiseScalar = 1, kPointwisePerChannel = 2 };
std::vector<int64_t> packPointwiseParams(const PointwiseLaunchParams& params);

// FNV-1a 64 of text (the payload's source hash).
uint64_t fnv1a64(const std::string& text);

}  // namespace kiln::cuda
