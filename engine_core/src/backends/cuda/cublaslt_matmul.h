#pragma once
// cuBLASLt for the CUDA backend's matrix products. Kiln's tensors are row-major; cuBLASLt's
// matrices are column-major, and a row-major M×N matrix is the same memory as a column-major N×M
// one, so D = op(A)·op(B) is computed as Dᵀ = op(B)ᵀ·op(A)ᵀ: cuBLASLt's "A" is Kiln's B, its "B"
// is Kiln's A, and its m, n are Kiln's N, M. A bias epilogue then adds one value per row of
// cuBLASLt's D, i.e. per column (N values) of Kiln's output: FusedMatMul's bias.
#include "cuda_device.h"

#include <cublasLt.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

// The workspace a step gives cuBLASLt at most: NVIDIA's advice for Hopper (less hides the split-K
// algorithms).
inline constexpr uint64_t kCublasWorkspaceBytes = uint64_t(32) << 20;

// cuBLASLt's handle for `device`, made on first use (one per backend: cuBLASLt handles may be used
// from several threads at once).
cublasLtHandle_t cublasLtHandle(CudaDevice& device);

// Throws kiln::Error(kRuntimeError) "<what>: <status name> (<text>)" unless `status` is success.
void checkCublas(cublasStatus_t status, const std::string& what);

// The cuBLASLt element type of a float DataType (float32, float16, bfloat16); nullopt for others.
std::optional<cudaDataType_t> cublasTypeOf(DataType type);

// One product on row-major matrices, strided-batched over `batch` matrices:
//   D[b] = epilogue(alpha · op(A[b]) · op(B[b]) + beta · C[b])
// op(A) is m×k (A stored k×m when transA), op(B) is k×n (B stored n×k when transB), C and D are
// dense m×n. Matrix b of an operand starts `stride*` elements after matrix b - 1 (0: the same
// matrix for every b). Bias epilogues add n values of cdType, one per column.
struct GemmShape {
  int64_t m = 1, n = 1, k = 1;
  bool transA = false, transB = false;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0, strideD = 0;
  cudaDataType_t abType = CUDA_R_32F, cdType = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  // fp8 products: column j of D is scaled by a device fp32 vector of n values (cuBLASLt's A scale
  // in OUTER_VEC_32F mode; LtGemm::setColumnScales), a quantized layer's per-channel dequantization.
  bool columnScales = false;
  // ... and row i of D by a vector of m values (cuBLASLt's B scale in OUTER_VEC_32F mode), where
  // cuBLASLt takes outer-vector scales only on both operands.
  bool rowScales = false;
  // fp8 products: Hopper's tensor cores keep the running sums without cuBLASLt's periodic
  // promotion to fp32 (CUBLASLT_MATMUL_DESC_FAST_ACCUM): faster, sums about 1e-4 less exact.
  bool fastAccumulation = false;

  bool hasBias() const;
  std::string describe() const;  // for messages: "64x32x128 fp16 batch 4"
  // alpha's and beta's type: int32 for int8 products into int32, else fp32.
  cudaDataType_t scaleType() const;
};

// The cuBLASLt descriptors of one GemmShape, made once and used for its heuristics and launches.
// Not thread-safe (launches set the bias pointer): one per execution context.
class LtGemm {
 public:
  explicit LtGemm(const GemmShape& shape);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  const GemmShape& shape() const { return shape_; }

  // The descriptors in cuBLASLt's roles (its A is Kiln's B, its B Kiln's A), for host tests that
  // check what cuBLASLt is asked to compute.
  struct Descriptors {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, d;
  };
  Descriptors descriptors() const { return {desc_, ltA_, ltB_, ltC_, ltD_}; }

  // Up to `count` algorithms, best first, for operands whose pointers are all aligned to
  // `alignment` bytes (a power of two up to 256), using at most `maxWorkspace` bytes. Empty when
  // cuBLASLt has none.
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics(cublasLtHandle_t handle, int count, uint64_t maxWorkspace,
                                                          uint32_t alignment);
  // The workspace `algo` needs for this shape, or nullopt when it cannot run it (another cuBLASLt
  // version, another shape).
  std::optional<uint64_t> check(cublasLtHandle_t handle, const cublasLtMatmulAlgo_t& algo);
  // cublasLtMatmulAlgoCheck's whole answer (workspace and waves), or nullopt when it refuses.
  std::optional<cublasLtMatmulHeuristicResult_t> checkAlgo(cublasLtHandle_t handle, const cublasLtMatmulAlgo_t& algo);
  // The per-column scales of a columnScales product (n fp32 values on the device).
  void setColumnScales(const float* scales);
  // The per-row scales of a rowScales product (m fp32 values on the device).
  void setRowScales(const float* scales);
  // Enqueues the product; `what` names the caller for errors. `c` may equal `d` (in place). An
  // int8 product into int32 (compute 32I) takes alpha and beta as integers (they are converted).
  void run(cublasLtHandle_t handle, const cublasLtMatmulAlgo_t& algo, float alpha, const void* a, const void* b,
           float beta, const void* c, void* d, const void* bias, void* workspace, uint64_t workspaceBytes,
           cudaStream_t stream, const std::string& what);

 private:
  void setBias(const void* bias);
  // Sets a pointer attribute of the descriptor unless `current` holds it already.
  void setPointer(cublasLtMatmulDescAttributes_t attribute, const void* pointer, const void*& current,
                  const char* what);
  void release();

  GemmShape shape_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  // In cuBLASLt's roles: ltA holds Kiln's B, ltB Kiln's A.
  cublasLtMatrixLayout_t ltA_ = nullptr, ltB_ = nullptr, ltC_ = nullptr, ltD_ = nullptr;
  const void* bias_ = nullptr;
  const void* columnScales_ = nullptr;
  const void* rowScales_ = nullptr;
};

// The largest power of two up to 256 dividing every address (nullptr ignored) and byte offset given.
uint32_t commonAlignment(std::initializer_list<uint64_t> addressesAndOffsets);

// A heuristic's choice as stored in a tactic payload: the algorithm, the workspace it needed and
// the pointer alignment it was chosen for, with cuBLASLt's version (an algorithm is only valid
// with the cuBLASLt that made it).
struct StoredAlgo {
  cublasLtMatmulAlgo_t algo{};
  uint64_t workspaceBytes = 0;
  uint32_t alignment = 256;
  uint32_t variant = 0;  // the caller's own note of which of its problem forms it was chosen for
};
std::vector<uint8_t> encodeAlgo(const StoredAlgo& stored);
// nullopt for an empty payload, one from another cuBLASLt version, or bytes that are no payload.
std::optional<StoredAlgo> decodeAlgo(const std::vector<uint8_t>& payload);

}  // namespace kiln::cuda
