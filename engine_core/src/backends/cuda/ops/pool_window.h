#pragma once
// The CUDA pool kernels' window of a pooling layer (cuda_pool.cpp), shared with the steps that
// pool another op's output (kiln.FusedConvPool's split form).
#include <kiln/network.h>
#include <kernels/cuda/pool/pool.h>

#include <cstdint>
#include <vector>

namespace kiln::cuda {

// The window over logical input dims [N, C, spatial...] (whatever the layout in memory), from the
// attributes as the schema and the CPU kernels resolve them (auto_pad, ceil_mode, pads).
kernels::cuda::PoolWindow poolWindow(const Layer& layer, const std::vector<int64_t>& dims);

}  // namespace kiln::cuda
