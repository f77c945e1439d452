#include "pointwise_nvrtc_step.h"

#include "../cuda_runtime_support.h"
#include "../cuda_step.h"
#include "pointwise_codegen.h"
#include "pointwise_launch.h"
#include "pointwise_nvrtc.h"

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

constexpr const char* kTacticPrefix = "nvrtc.pointwise.";
constexpr int kThreadsPerBlock = 256;

int archOf(const CudaDevice& device) { return device.properties.major * 10 + device.properties.minor; }

std::string kernelNames() {
  return std::string(kPointwisePackedKernel) + "," + kPointwiseGeneral32Kernel + "," + kPointwiseGeneral64Kernel;
}

class NvrtcPointwiseStep : public CudaStep {
 public:
  NvrtcPointwiseStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device,
                     std::unique_ptr<Network> body)
      : CudaStep(layer, tactic, signature, device), body_(std::move(body)) {
    PointwiseCodegen generated = generatePointwiseKernel(*body_);
    if (!generated.kernel)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": the plan runs it as one NVRTC kernel, which " +
                                                   generated.refusal + "; rebuild the plan");
    kernel_ = std::move(*generated.kernel);
    const PointwisePayload payload = decodePointwisePayload(tactic.payload, archOf(device), layer.describe());
    if (payload.sourceHash != fnv1a64(kernel_.source))
      throw Error(ErrorCode::kInvalidArgument, layer.describe() +
                                                   ": its NVRTC kernel in the plan was generated from another body "
                                                   "(or by another Kiln); rebuild the plan on this GPU");
    check(cudaLibraryLoadData(&library_, payload.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "loading its NVRTC kernel from the plan (rebuild the plan on this GPU)");
    check(cudaLibraryGetKernel(&packed_, library_, kPointwisePackedKernel), "finding its NVRTC kernel");
    check(cudaLibraryGetKernel(&general32_, library_, kPointwiseGeneral32Kernel), "finding its NVRTC kernel");
    check(cudaLibraryGetKernel(&general64_, library_, kPointwiseGeneral64Kernel), "finding its NVRTC kernel");
    for (const PointwiseKernelInput& in : kernel_.inputs)
      constants_.push_back(in.constant ? DeviceCopy(device.allocator, in.constant->rawData(), in.constant->byteSize())
                                       : DeviceCopy());
    maxBlocks_ = std::max(1, device.properties.multiProcessorCount) * 32;
  }

  ~NvrtcPointwiseStep() override {
    if (library_) cudaLibraryUnload(library_);
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    if (out.dtype != kernel_.outputStorage)
      throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": its output is " +
                                                   std::string(toString(out.dtype)) + ", its NVRTC kernel writes " +
                                                   std::string(toString(kernel_.outputStorage)));
    if (out.elementCount() == 0) return;
    std::vector<PointwiseOperand> operands;
    for (size_t k = 0; k < kernel_.inputs.size(); ++k) {
      const PointwiseKernelInput& in = kernel_.inputs[k];
      PointwiseOperand operand;
      operand.storage = in.storage;
      if (in.constant) {
        operand.dims = in.constant->dims();
        operand.data = constants_[k].get();
      } else {
        const TensorView& view = args.inputs[*in.layerInput];
        if (view.dtype != in.storage)
          throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": its input " + std::to_string(*in.layerInput) +
                                                       " is " + std::string(toString(view.dtype)) +
                                                       ", its NVRTC kernel reads " + std::string(toString(in.storage)));
        operand.dims = view.dims;
        operand.channelsLast = view.format == TensorFormat::kNHWC && view.dims.size() == 4;
        operand.data = input(args, *in.layerInput);
      }
      operands.push_back(std::move(operand));
    }
    PointwiseOperand output{out.dims, out.format == TensorFormat::kNHWC && out.dims.size() == 4, out.data,
                            kernel_.outputStorage};
    const PointwiseLaunch launch = planPointwiseLaunch(operands, output, kernel_.pack, layer_.describe());
    std::vector<int64_t> words = packPointwiseParams(launch.params);
    void* kernelArgs[] = {words.data()};
    const cudaKernel_t kernel = launch.kernel == PointwiseKernelChoice::kPacked      ? packed_
                                : launch.kernel == PointwiseKernelChoice::kGeneral32 ? general32_
                                                                                     : general64_;
    const int64_t blocks =
        std::clamp<int64_t>((launch.threads + kThreadsPerBlock - 1) / kThreadsPerBlock, 1, maxBlocks_);
    check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(unsigned(blocks)), dim3(kThreadsPerBlock),
                           kernelArgs, 0, streamOf(stream)));
  }

 private:
  std::unique_ptr<Network> body_;  // the constants the kernel reads live here
  PointwiseKernel kernel_;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t packed_ = nullptr, general32_ = nullptr, general64_ = nullptr;
  std::vector<DeviceCopy> constants_;  // per kernel input: the uploaded constant, if it is one
  int64_t maxBlocks_ = 1;
};

}  // namespace

std::string nvrtcPointwiseTacticId(Precision precision) { return kTacticPrefix + std::string(precisionTag(precision)); }

bool isNvrtcPointwiseTactic(const std::string& id) { return id.rfind(kTacticPrefix, 0) == 0; }

std::optional<Tactic> nvrtcPointwiseTactic(const Layer& layer, Precision precision, const Network& body,
                                           CudaDevice& device, std::string* refusal) {
#ifdef KILN_CUDA_EMULATION  // scripts/cuda_emulation runs kernels on the host, never a cubin
  if (refusal) *refusal = "the CUDA emulator runs no NVRTC kernels";
  return std::nullopt;
#endif
  PointwiseCodegen generated = generatePointwiseKernel(body);
  if (!generated.kernel) {
    if (refusal) *refusal = generated.refusal;
    return std::nullopt;
  }
  PointwisePayload payload;
  payload.arch = uint32_t(archOf(device));
  payload.nvrtcVersion = uint32_t(nvrtcVersionNumber());
  payload.sourceHash = fnv1a64(generated.kernel->source);
  for (const std::string& o : nvrtcOptions(int(payload.arch)))
    payload.options += (payload.options.empty() ? "" : " ") + o;
  payload.kernels = kernelNames();
  try {
    payload.cubin = *compileCubin(generated.kernel->source, int(payload.arch));
  } catch (const Error& e) {
    if (refusal) *refusal = layer.describe() + ": " + e.what();
    return std::nullopt;
  }
  Tactic tactic{nvrtcPointwiseTacticId(precision)};
  tactic.payload = encodePointwisePayload(payload);
  return tactic;
}

std::unique_ptr<Step> makeNvrtcPointwiseStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                             CudaDevice& device, std::unique_ptr<Network> body) {
  return std::make_unique<NvrtcPointwiseStep>(layer, tactic, signature, device, std::move(body));
}

}  // namespace kiln::cuda
