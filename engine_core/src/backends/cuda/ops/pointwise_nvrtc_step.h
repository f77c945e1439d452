#pragma once
// The nvrtc.pointwise tactic of kiln.Pointwise: its body as one generated kernel
// (pointwise_codegen.h), compiled with NVRTC when the builder lists tactics and carried in the
// tactic's payload (pointwise_nvrtc.h), loaded with the CUDA runtime's library API when the step
// is made (never compiled at load).
#include "../cuda_ops.h"

#include <optional>
#include <string>

namespace kiln::cuda {

// "nvrtc.pointwise.fp16": the source prefix "nvrtc" lets --tactic-sources -nvrtc switch it off.
std::string nvrtcPointwiseTacticId(Precision precision);
bool isNvrtcPointwiseTactic(const std::string& id);

// The tactic for `layer` whose body typed for `precision` is `body`, its payload compiled for
// this device; nullopt with `*refusal` set when the generator or NVRTC does not take the body.
std::optional<Tactic> nvrtcPointwiseTactic(const Layer& layer, Precision precision, const Network& body,
                                           CudaDevice& device, std::string* refusal);

// The step for that tactic; `body` is the layer's body typed as the tactic's precision stores it.
std::unique_ptr<Step> makeNvrtcPointwiseStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                             CudaDevice& device, std::unique_ptr<Network> body);

}  // namespace kiln::cuda
