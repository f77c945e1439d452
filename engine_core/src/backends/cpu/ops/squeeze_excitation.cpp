// CPU kernel for kiln.SqueezeExcitation (semantics: engine_core/src/ops/fused.cpp): each channel's
// spatial mean, summed in double (a 112x112 map is 12544 values, more than float's 24 bits keep
// exact), then the two products over the whole batch (one sgemm each), each followed by its bias
// and activation through the fused epilogue code the FusedConv kernel runs, so the fused layer computes
// what the GlobalAveragePool and the two (Fused)Convs compute.
#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cpu/gemm/gemm.h>

#include "../../../ops/fused.h"
#include "../../common/fused_epilogue.h"
#include "../cpu_kernel.h"
#include "fused_epilogue.h"

#include <algorithm>
#include <vector>

namespace kiln {
namespace {

namespace se = fused::squeeze_excitation;

// Checks that filter input `i` is float32 [outputs, `inputs`, 1, ...] of `rank` dims; returns outputs.
int64_t filterOutputs(const KernelContext& ctx, size_t i, size_t rank, int64_t inputs, const char* what) {
  const HostTensor& w = ctx.input(i);
  if (w.dtype() != DataType::kFloat32) ctx.fail(std::string(what) + " must be float32");
  bool spatialOnes = w.rank() == rank;
  for (size_t d = 2; spatialOnes && d < rank; ++d) spatialOnes = w.dim(d) == 1;
  if (!spatialOnes || w.dim(1) != inputs)
    ctx.fail(std::string(what) + " has shape " + dimsToString(w.dims()) + "; expected [M, " + std::to_string(inputs) +
             "] followed by " + std::to_string(rank - 2) + " spatial dims of 1");
  return w.dim(0);
}

// One stage's bias and activation, applied to the `length` values of one image.
kernels::Epilogue stageEpilogue(const Layer& layer, const std::string& prefix, const float* bias, int64_t length) {
  return kernels::withChannelBias(kernelEpilogueOf(readFusedEpilogue(layer, prefix)), bias, length, 1);
}

void squeezeExcitation(KernelContext& ctx) {
  const HostTensor& x = ctx.input(se::kX);
  if (x.dtype() != DataType::kFloat32) ctx.fail("X must be float32");
  if (x.rank() < 3) ctx.fail("X must be [N, C, spatial...] (rank 3 or more), got " + dimsToString(x.dims()));
  const int64_t batch = x.dim(0), channels = x.dim(1);
  int64_t planeSize = 1;
  for (size_t d = 2; d < x.rank(); ++d) planeSize *= x.dim(d);
  const int64_t reduced = filterOutputs(ctx, se::kW1, x.rank(), channels, "W1");
  const int64_t outChannels = filterOutputs(ctx, se::kW2, x.rank(), reduced, "W2");
  const float* b1 = ctx.hasInput(se::kB1) ? float32Input(ctx, se::kB1, reduced, "B1") : nullptr;
  const float* b2 = ctx.hasInput(se::kB2) ? float32Input(ctx, se::kB2, outChannels, "B2") : nullptr;
  const kernels::Epilogue squeeze = stageEpilogue(ctx.layer(), fused::kSqueezePrefix, b1, reduced);
  const kernels::Epilogue excite = stageEpilogue(ctx.layer(), fused::kExcitePrefix, b2, outChannels);

  std::vector<int64_t> outDims(x.rank(), 1);
  outDims[0] = batch;
  outDims[1] = outChannels;
  HostTensor& out = ctx.allocateOutput(0, DataType::kFloat32, outDims);

  std::vector<float> means(static_cast<size_t>(batch * channels));
  const float* in = x.data<float>();
  kernels::parallelFor(batch * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, planeSize)),
                       [&](int64_t begin, int64_t end) {
                         for (int64_t plane = begin; plane < end; ++plane) {
                           const float* values = in + plane * planeSize;
                           double sum = 0;
                           for (int64_t i = 0; i < planeSize; ++i) sum += values[i];
                           means[size_t(plane)] = float(sum / double(planeSize));
                         }
                       });
  // Both products over the whole batch, one sgemm each: hidden[N, R] = means · W1ᵀ, then
  // gate[N, C2] = hidden · W2ᵀ; each stage's bias runs along its rows' R (or C2) columns.
  std::vector<float> hidden(static_cast<size_t>(batch * reduced));
  const float *w1 = ctx.input(se::kW1).data<float>(), *w2 = ctx.input(se::kW2).data<float>();
  kernels::gemm<float>(false, true, batch, reduced, channels, 1.0f, means.data(), channels, w1, channels, 0.0f,
                       hidden.data(), reduced);
  kernels::applyEpilogueSpan(hidden.data(), 0, batch * reduced, squeeze);
  kernels::gemm<float>(false, true, batch, outChannels, reduced, 1.0f, hidden.data(), reduced, w2, reduced, 0.0f,
                       out.data<float>(), outChannels);
  kernels::applyEpilogueSpan(out.data<float>(), 0, batch * outChannels, excite);
}

}  // namespace

void registerSqueezeExcitationCpuKernel(CpuKernelRegistry& registry) {
  registry.add(fused::kDomain, fused::kSqueezeExcitation, squeezeExcitation);
}

}  // namespace kiln
