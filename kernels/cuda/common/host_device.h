#pragma once
// KILN_HD marks code that runs on the host and on the device: index math, broadcasting and
// per-element functors are written once, compiled by nvcc for the GPU and by the host compiler for
// the unit tests that CI runs without a GPU.
#if defined(__CUDACC__)
#define KILN_HD __host__ __device__ __forceinline__
#else
#define KILN_HD inline
#endif
