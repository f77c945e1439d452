#pragma once
// How the CUDA backend's MatMul, Gemm and kiln.FusedMatMul steps (cuda_matmul.cpp) map a layer
// onto cuBLASLt products: what the layer computes (its spec), how one set of input dims becomes
// strided-batched products (its geometry), and which parts of a fused epilogue cuBLASLt takes
// (its fusion). Plain host code: tests/cuda_plans checks it against the CPU's semantics with
// cuBLASLt's documented arithmetic emulated on the host.
#include "../../backend.h"
#include "../../common/fused_epilogue.h"
#include "../cublaslt_matmul.h"
#include "../cuda_precision.h"

#include <cstdint>
#include <vector>

namespace kiln::cuda {

enum MatMulInput : size_t { kMatMulA = 0, kMatMulB = 1, kMatMulC = 2, kMatMulResidual = 3 };

// What a layer computes, from its attributes and precision; dims come with each shape.
struct MatMulSpec {
  bool fused = false, gemm = false;
  bool transA = false, transB = false;
  float alpha = 1, beta = 1;
  bool hasC = false;         // Gemm's C (used: beta != 0) or a fused MatMul's bias
  bool cConstant = false;    // ... and it is a weight
  bool hasResidual = false;  // a fused layer's input 3
  FusedEpilogue epilogue;
  DataType storage = DataType::kFloat32;  // of every activation and the output
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
};

// Sets spec's storage, cuBLASLt type and compute type (TF32 only where `precision` allows it) for
// outputs declared `outputDeclared`; throws kUnsupported naming the layer for a storage type
// cuBLASLt does not take here.
void setProductTypes(MatMulSpec& spec, const Layer& layer, Precision precision, DataType outputDeclared);

// Throws kUnsupported naming the layer for a storage type cuBLASLt does not take here.
MatMulSpec matMulSpecOf(const Layer& layer, Precision precision, DataType outputDeclared, bool cConstant);

// How Gemm's C (or a fused MatMul's bias) enters the product.
enum class CRole { kNone, kOperand, kBias, kBroadcast, kElementwiseBias };

struct Offsets {
  int64_t a = 0, b = 0, y = 0;  // elements
};

// One set of input dims as cuBLASLt products.
struct Geometry {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideY = 0;  // the strided batch
  std::vector<Offsets> outer{Offsets{}};                     // one strided batch each
  uint64_t offsetBits = 0;  // every outer offset in bytes, OR-ed: what they do to pointer alignment
  bool empty = false;       // the output has no element
  CRole c = CRole::kNone;
  std::vector<int64_t> cDims;  // Gemm's C, or the fused bias as it broadcasts against the output
  int64_t outputElements = 0;
};

// The products of one set of input dims; throws kInvalidArgument naming the layer for dims that
// do not multiply.
Geometry productGeometryOf(const Layer& layer, const MatMulSpec& spec, const LayerShapes& dims);

// Which parts of the epilogue run inside cuBLASLt at one fusion level (0: all it takes; 1: none
// of its epilogues, for when it has no algorithm with them).
struct Fusion {
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  bool residualInC = false;
  bool elementwiseBias = false, elementwiseResidualBefore = false, elementwiseActivation = false,
       elementwiseResidualAfter = false;
};

Fusion fusionOf(const MatMulSpec& spec, const Geometry& geometry, int level, bool zeroK);

// The cuBLASLt problem of one strided batch (C, when used, is output-shaped).
GemmShape gemmShapeOf(const MatMulSpec& spec, const Geometry& geometry, const Fusion& fusion);

}  // namespace kiln::cuda
