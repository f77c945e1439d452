#pragma once
// kiln.Attention's fused tactics (cuda_flash_attention.cpp), offered beside the two-product step
// of cuda_attention.cpp, which registers the op and hands these tactics to this file's step.
#include "../../backend.h"
#include "../cuda_device.h"

#include <memory>
#include <vector>

namespace kiln::cuda {

// "cuda.attention.flash.<fp16|bf16|tf32>" (64 query rows a block),
// "cuda.attention.flash.q128.<...>" (128) and "cuda.attention.flash.q32.<...>" (32), and where the
// blocks would leave most of the device idle "cuda.attention.flash[.q32].split.<...>" (the keys
// split over blocks, their outputs combined by a second kernel: a workspace), for fp16, bf16
// and tf32 layers whose head dims the kernels take (up to 128) on sm_80 or later; none otherwise
// (fp32 layers keep exact fp32 products).
std::vector<Tactic> flashAttentionTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                          CudaDevice& device);
bool isFlashAttentionTactic(const Tactic& tactic);
std::unique_ptr<Step> makeFlashAttentionStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                             CudaDevice& device);

}  // namespace kiln::cuda
