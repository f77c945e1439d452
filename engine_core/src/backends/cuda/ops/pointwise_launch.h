#pragma once
// Which of a generated pointwise module's kernels runs at these dims and layouts, and its
// parameters (pointwise_codegen.h): the iteration space is the output's memory order ([N,H,W,C]
// for a channels-last output), each input's element strides over it (broadcast axes 0, its own
// layout permuted in), axes merged where every operand is contiguous across them. Host-only, so
// CI checks it without a GPU.
#include "pointwise_codegen.h"

#include <kiln/data_type.h>

#include <string>
#include <vector>

namespace kiln::cuda {

struct PointwiseOperand {
  std::vector<int64_t> dims;  // logical (N, C, H, W also when channels-last)
  bool channelsLast = false;  // a 4-D tensor stored [N, H, W, C]
  const void* data = nullptr;
  DataType storage = DataType::kFloat32;
};

enum class PointwiseKernelChoice { kPacked, kGeneral32, kGeneral64 };

struct PointwiseLaunch {
  PointwiseKernelChoice kernel = PointwiseKernelChoice::kGeneral64;
  PointwiseLaunchParams params;
  int64_t threads = 0;  // work items: packs plus the tail for kPacked, elements otherwise
};

// Throws kiln::Error naming `who` when an input's dims do not broadcast to the output's.
PointwiseLaunch planPointwiseLaunch(const std::vector<PointwiseOperand>& inputs, const PointwiseOperand& output,
                                    int pack, const std::string& who);

}  // namespace kiln::cuda
