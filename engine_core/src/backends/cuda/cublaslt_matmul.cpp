#include "cublaslt_matmul.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstring>

namespace kiln::cuda {

cublasLtHandle_t cublasLtHandle(CudaDevice& device) {
  // A first use that throws leaves the flag unset, so the next one tries again.
  std::call_once(device.cublasLtOnce, [&] {
    cublasLtHandle_t handle = nullptr;
    checkCublas(cublasLtCreate(&handle), "creating the cuBLASLt handle (cublasLtCreate)");
    device.cublasLt = std::shared_ptr<void>(handle, [](void* h) { cublasLtDestroy(static_cast<cublasLtHandle_t>(h)); });
  });
  return static_cast<cublasLtHandle_t>(device.cublasLt.get());
}

void checkCublas(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(ErrorCode::kRuntimeError,
              what + ": " + cublasLtGetStatusName(status) + " (" + cublasLtGetStatusString(status) + ")");
}

std::optional<cudaDataType_t> cublasTypeOf(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return CUDA_R_32F;
    case DataType::kFloat16:
      return CUDA_R_16F;
    case DataType::kBFloat16:
      return CUDA_R_16BF;
    default:
      return std::nullopt;
  }
}

bool GemmShape::hasBias() const {
  return epilogue == CUBLASLT_EPILOGUE_BIAS || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
         epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
}

namespace {

const char* typeName(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F:
      return "fp32";
    case CUDA_R_16F:
      return "fp16";
    case CUDA_R_16BF:
      return "bf16";
    case CUDA_R_8I:
      return "int8";
    case CUDA_R_32I:
      return "int32";
    case CUDA_R_8F_E4M3:
      return "fp8e4m3";
    default:
      return "other";
  }
}

}  // namespace

// int8 products into int32 scale by integers; every other product takes float alpha and beta.
cudaDataType_t GemmShape::scaleType() const {
  return compute == CUBLAS_COMPUTE_32I && cdType == CUDA_R_32I ? CUDA_R_32I : CUDA_R_32F;
}

std::string GemmShape::describe() const {
  std::string s = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " (MxNxK) " +
                  typeName(abType) + (abType == cdType ? "" : std::string("->") + typeName(cdType));
  if (transA || transB) s += std::string(" trans") + (transA ? "A" : "") + (transB ? "B" : "");
  if (compute == CUBLAS_COMPUTE_32F_FAST_TF32) s += " tf32";
  if (columnScales) s += rowScales ? " row- and column-scaled" : " column-scaled";
  if (fastAccumulation) s += " fast-accumulating";
  if (batch > 1) s += " batch " + std::to_string(batch);
  return s;
}

LtGemm::LtGemm(const GemmShape& shape) : shape_(shape) {
  const std::string what = "cuBLASLt descriptors for a " + shape.describe() + " product";
  try {
    checkCublas(cublasLtMatmulDescCreate(&desc_, shape.compute, shape.scaleType()),
                what + " (cublasLtMatmulDescCreate)");
    // cuBLASLt's A is Kiln's B: stored k×n row-major (column-major n×k, used as is) or, with
    // transB, n×k row-major (column-major k×n, transposed). Likewise its B is Kiln's A.
    const cublasOperation_t opA = shape.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opB = shape.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    const uint32_t epilogue = shape.epilogue;
    auto setDesc = [&](cublasLtMatmulDescAttributes_t attribute, const void* value, size_t bytes) {
      checkCublas(cublasLtMatmulDescSetAttribute(desc_, attribute, value, bytes),
                  what + " (cublasLtMatmulDescSetAttribute " + std::to_string(int(attribute)) + ")");
    };
    setDesc(CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA));
    setDesc(CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB));
    setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
    const int32_t outerVector = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    if (shape.columnScales)  // cuBLASLt's A is Kiln's B: its rows are D's columns
      setDesc(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &outerVector, sizeof(outerVector));
    if (shape.rowScales) setDesc(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &outerVector, sizeof(outerVector));
    if (shape.fastAccumulation) {
      const int8_t fast = 1;
      setDesc(CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast));
    }

    auto layout = [&](cublasLtMatrixLayout_t& out, cudaDataType_t type, int64_t rows, int64_t cols, int64_t stride) {
      checkCublas(cublasLtMatrixLayoutCreate(&out, type, uint64_t(rows), uint64_t(cols), rows),
                  what + " (cublasLtMatrixLayoutCreate)");
      if (shape.batch <= 1) return;
      const int32_t count = int32_t(shape.batch);
      checkCublas(cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                  what + " (cublasLtMatrixLayoutSetAttribute BATCH_COUNT)");
      checkCublas(
          cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
          what + " (cublasLtMatrixLayoutSetAttribute STRIDED_BATCH_OFFSET)");
    };
    // Column-major rows × cols with ld = rows: a dense row-major cols × rows matrix.
    if (shape.transB)
      layout(ltA_, shape.abType, shape.k, shape.n, shape.strideB);
    else
      layout(ltA_, shape.abType, shape.n, shape.k, shape.strideB);
    if (shape.transA)
      layout(ltB_, shape.abType, shape.m, shape.k, shape.strideA);
    else
      layout(ltB_, shape.abType, shape.k, shape.m, shape.strideA);
    layout(ltC_, shape.cdType, shape.n, shape.m, shape.strideC);
    layout(ltD_, shape.cdType, shape.n, shape.m, shape.strideD);
  } catch (...) {
    release();
    throw;
  }
}

LtGemm::~LtGemm() { release(); }

void LtGemm::release() {
  for (cublasLtMatrixLayout_t* l : {&ltA_, &ltB_, &ltC_, &ltD_})
    if (*l) {
      cublasLtMatrixLayoutDestroy(*l);
      *l = nullptr;
    }
  if (desc_) {
    cublasLtMatmulDescDestroy(desc_);
    desc_ = nullptr;
  }
}

void LtGemm::setPointer(cublasLtMatmulDescAttributes_t attribute, const void* pointer, const void*& current,
                        const char* what) {
  if (pointer == current) return;
  const cublasStatus_t status = cublasLtMatmulDescSetAttribute(desc_, attribute, &pointer, sizeof(pointer));
  if (status != CUBLAS_STATUS_SUCCESS)
    checkCublas(status, std::string("setting the ") + what + " of a " + shape_.describe() +
                            " product (cublasLtMatmulDescSetAttribute " + std::to_string(int(attribute)) + ")");
  current = pointer;
}

void LtGemm::setBias(const void* bias) {
  if (shape_.hasBias()) setPointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, bias_, "bias");
}

void LtGemm::setColumnScales(const float* scales) {
  if (shape_.columnScales) setPointer(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales, columnScales_, "column scales");
}

void LtGemm::setRowScales(const float* scales) {
  if (shape_.rowScales) setPointer(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scales, rowScales_, "row scales");
}

std::vector<cublasLtMatmulHeuristicResult_t> LtGemm::heuristics(cublasLtHandle_t handle, int count,
                                                                uint64_t maxWorkspace, uint32_t alignment) {
  const std::string what = "choosing a cuBLASLt algorithm for a " + shape_.describe() + " product";
  // The heuristic reads the bias pointer's value for its alignment only; until a launch gives the
  // real one, stand in a 256-byte aligned address (biases are uploaded weights, 256-byte aligned).
  if (shape_.hasBias() && !bias_) setBias(reinterpret_cast<const void*>(uintptr_t(256)));
  if (shape_.columnScales && !columnScales_) setColumnScales(reinterpret_cast<const float*>(uintptr_t(256)));
  if (shape_.rowScales && !rowScales_) setRowScales(reinterpret_cast<const float*>(uintptr_t(256)));
  cublasLtMatmulPreference_t preference = nullptr;
  checkCublas(cublasLtMatmulPreferenceCreate(&preference), what + " (cublasLtMatmulPreferenceCreate)");
  std::vector<cublasLtMatmulHeuristicResult_t> results(size_t(std::max(count, 1)));
  int returned = 0;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &maxWorkspace, sizeof(maxWorkspace));
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &alignment, sizeof(alignment));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle, desc_, ltA_, ltB_, ltC_, ltD_, preference, int(results.size()),
                                            results.data(), &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  // NOT_SUPPORTED: no algorithm for this problem, which the caller reports with what it knows.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  checkCublas(status, what + " (cublasLtMatmulAlgoGetHeuristic)");
  results.resize(size_t(std::max(returned, 0)));
  results.erase(
      std::remove_if(results.begin(), results.end(),
                     [](const cublasLtMatmulHeuristicResult_t& r) { return r.state != CUBLAS_STATUS_SUCCESS; }),
      results.end());
  return results;
}

std::optional<uint64_t> LtGemm::check(cublasLtHandle_t handle, const cublasLtMatmulAlgo_t& algo) {
  const auto result = checkAlgo(handle, algo);
  if (!result) return std::nullopt;
  return uint64_t(result->workspaceSize);
}

std::optional<cublasLtMatmulHeuristicResult_t> LtGemm::checkAlgo(cublasLtHandle_t handle,
                                                                 const cublasLtMatmulAlgo_t& algo) {
  if (shape_.hasBias() && !bias_) setBias(reinterpret_cast<const void*>(uintptr_t(256)));
  if (shape_.columnScales && !columnScales_) setColumnScales(reinterpret_cast<const float*>(uintptr_t(256)));
  if (shape_.rowScales && !rowScales_) setRowScales(reinterpret_cast<const float*>(uintptr_t(256)));
  cublasLtMatmulHeuristicResult_t result{};
  const cublasStatus_t status = cublasLtMatmulAlgoCheck(handle, desc_, ltA_, ltB_, ltC_, ltD_, &algo, &result);
  if (status != CUBLAS_STATUS_SUCCESS || result.state != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  return result;
}

void LtGemm::run(cublasLtHandle_t handle, const cublasLtMatmulAlgo_t& algo, float alpha, const void* a, const void* b,
                 float beta, const void* c, void* d, const void* bias, void* workspace, uint64_t workspaceBytes,
                 cudaStream_t stream, const std::string& what) {
  setBias(bias);
  const int32_t alphaInt = int32_t(alpha), betaInt = int32_t(beta);
  const bool integerScale = shape_.scaleType() == CUDA_R_32I;
  const void* alphaPtr = integerScale ? static_cast<const void*>(&alphaInt) : &alpha;
  const void* betaPtr = integerScale ? static_cast<const void*>(&betaInt) : &beta;
  // cuBLASLt's operands in its roles: its A is Kiln's B, its B Kiln's A (see the header).
  const cublasStatus_t status = cublasLtMatmul(handle, desc_, alphaPtr, b, ltA_, a, ltB_, betaPtr, c, ltC_, d, ltD_,
                                               &algo, workspace, size_t(workspaceBytes), stream);
  if (status != CUBLAS_STATUS_SUCCESS)  // the message is only built on failure: launches allocate nothing
    checkCublas(status, what + ": cublasLtMatmul on a " + shape_.describe() + " product");
}

uint32_t commonAlignment(std::initializer_list<uint64_t> addressesAndOffsets) {
  uint64_t bits = 256;
  for (uint64_t v : addressesAndOffsets) bits |= v;
  return uint32_t(bits & (~bits + 1));  // the lowest set bit
}

namespace {

constexpr char kPayloadMagic[4] = {'K', 'L', 'T', '1'};
constexpr size_t kPayloadBytes =
    sizeof(kPayloadMagic) + sizeof(uint64_t) * 2 + sizeof(uint32_t) * 2 + sizeof(cublasLtMatmulAlgo_t);

}  // namespace

std::vector<uint8_t> encodeAlgo(const StoredAlgo& stored) {
  std::vector<uint8_t> bytes(kPayloadBytes);
  uint8_t* p = bytes.data();
  const uint64_t version = cublasLtGetVersion();
  std::memcpy(p, kPayloadMagic, sizeof(kPayloadMagic));
  p += sizeof(kPayloadMagic);
  std::memcpy(p, &version, sizeof(version));
  p += sizeof(version);
  std::memcpy(p, &stored.workspaceBytes, sizeof(stored.workspaceBytes));
  p += sizeof(stored.workspaceBytes);
  std::memcpy(p, &stored.alignment, sizeof(stored.alignment));
  p += sizeof(stored.alignment);
  std::memcpy(p, &stored.variant, sizeof(stored.variant));
  p += sizeof(stored.variant);
  std::memcpy(p, &stored.algo, sizeof(stored.algo));
  return bytes;
}

std::optional<StoredAlgo> decodeAlgo(const std::vector<uint8_t>& payload) {
  if (payload.size() != kPayloadBytes || std::memcmp(payload.data(), kPayloadMagic, sizeof(kPayloadMagic)) != 0)
    return std::nullopt;
  const uint8_t* p = payload.data() + sizeof(kPayloadMagic);
  uint64_t version = 0;
  std::memcpy(&version, p, sizeof(version));
  p += sizeof(version);
  if (version != cublasLtGetVersion()) return std::nullopt;
  StoredAlgo stored;
  std::memcpy(&stored.workspaceBytes, p, sizeof(stored.workspaceBytes));
  p += sizeof(stored.workspaceBytes);
  std::memcpy(&stored.alignment, p, sizeof(stored.alignment));
  p += sizeof(stored.alignment);
  std::memcpy(&stored.variant, p, sizeof(stored.variant));
  p += sizeof(stored.variant);
  std::memcpy(&stored.algo, p, sizeof(stored.algo));
  if (stored.alignment == 0 || (stored.alignment & (stored.alignment - 1)) != 0) return std::nullopt;
  return stored;
}

}  // namespace kiln::cuda
