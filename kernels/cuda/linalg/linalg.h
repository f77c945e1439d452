#pragma once
// Small dense linear algebra on the GPU. Asynchronous; no allocation beyond the caller's workspace.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// Doubles of workspace determinants() needs for `batch` n×n matrices.
inline uint64_t determinantWorkspaceBytes(int64_t batch, int64_t n) { return uint64_t(batch * n * n) * sizeof(double); }

// out[b] = det(in[b]) for `batch` row-major n×n matrices: LU with partial pivoting in double
// (the CPU's algorithm, kernels/cpu/gemm/determinant.cpp), a thread per matrix. float32, float16,
// bfloat16, float64.
cudaError_t determinants(const void* in, void* out, int64_t batch, int64_t n, void* workspace, ElementType type,
                         cudaStream_t stream);

}  // namespace kiln::kernels::cuda
