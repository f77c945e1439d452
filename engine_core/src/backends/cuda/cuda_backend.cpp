// The CUDA backend: layers on one NVIDIA GPU, activations in its memory, work enqueued on the
// caller's stream. Made by kiln_make_cuda_backend(), which kiln_core finds in this module when a
// plan or `--backend cuda` asks for it.
#include <kiln/error.h>

#include "../../ops/quantized.h"
#include "../backend.h"
#include "cuda_device.h"
#include "cuda_formats.h"
#include "cudnn_conv.h"
#include "cublaslt_matmul.h"
#include "cuda_ops.h"

#include <functional>
#include <memory>

namespace kiln::cuda {
namespace {

// A CUDA graph of a stream's work, instantiated once and launched on any stream.
class CudaGraph : public RecordedWork {
 public:
  CudaGraph(cudaStream_t stream, const std::function<void()>& work) {
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "starting to capture a CUDA graph");
    try {
      work();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(stream, &broken);
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(stream, &graph), "capturing the engine's launches as a CUDA graph (a step that "
                                                "cannot be captured, such as a copy from pageable memory)");
    const cudaError_t status = cudaGraphInstantiate(&executable_, graph, 0);
    cudaGraphDestroy(graph);
    check(status, "instantiating the CUDA graph");
  }
  ~CudaGraph() override {
    if (executable_) cudaGraphExecDestroy(executable_);
  }
  void launch(Stream& stream) override {
    check(cudaGraphLaunch(executable_, nativeStream(stream)), "launching the engine's CUDA graph");
  }

 private:
  cudaGraphExec_t executable_ = nullptr;
};

class CudaBackend : public Backend {
 public:
  CudaBackend() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
      cudaGetLastError();
      const bool noDriver = status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice || count == 0;
      throw Error(ErrorCode::kUnsupported,
                  std::string("the CUDA backend found no usable GPU") +
                      (noDriver ? " (no NVIDIA GPU or driver on this machine)"
                                : std::string(" (") + cudaGetErrorString(status) + ")") +
                      "; build and run with --backend cpu here");
    }
    check(cudaGetDevice(&device_.ordinal), "choosing the GPU");
    check(cudaGetDeviceProperties(&device_.properties, device_.ordinal), "reading the GPU's properties");
    device_.computeCapability =
        std::to_string(device_.properties.major) + "." + std::to_string(device_.properties.minor);
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    libraries_ = "CUDA runtime " + std::to_string(runtime) + " driver " + std::to_string(driver) + " cuDNN " +
                 std::to_string(cudnnGetVersion()) + " cuBLASLt " + std::to_string(cublasLtGetVersion());
  }

  std::string name() const override { return "cuda"; }
  BackendKind kind() const override { return BackendKind::kCuda; }
  DeviceInfo device() const override { return {device_.properties.name, device_.computeCapability, libraries_}; }
  MemorySpace memorySpace() const override { return MemorySpace::kDevice; }
  bool convertsFloatStorage() const override { return false; }
  bool timesChannelsLastOutputs() const override { return true; }

  SupportVerdict supports(const Layer& layer, Precision precision) const override {
    if (precision == Precision::kFP4) {
      const std::string sm = std::to_string(device_.properties.major) + std::to_string(device_.properties.minor);
      return {false, (device_.properties.major < 10
                          ? "fp4 (NVFP4) needs Blackwell's FP4 tensor cores (sm_100 and later), which this GPU (sm_" +
                                sm + ") lacks"
                          : std::string("the CUDA backend has no fp4 (NVFP4) kernels yet")) +
                         "; Kiln emulates fp4 on the CPU backend (--backend cpu) to judge its accuracy"};
    }
    // int8 and fp8 run as the quantized layers the builder makes (their own precision attribute
    // says which, whatever is asked); other layers take no such precision.
    if ((precision == Precision::kINT8 || precision == Precision::kFP8) && !quantized::isQuantizedLayer(layer))
      return {false, "the CUDA backend runs " + std::string(toString(precision)) +
                         " only as quantized Conv / MatMul layers (kiln.QuantizedConv / QuantizedMatMul)"};
    const CudaOp* op = CudaOpRegistry::instance().find(layer.domain, layer.opType);
    if (!op) return {false, "no CUDA kernel for " + (layer.domain.empty() ? "" : layer.domain + ".") + layer.opType};
    return op->supportsLayer ? op->supportsLayer(layer, precision) : SupportVerdict{};
  }

  SupportVerdict supportsTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) const override {
    if (auto verdict = supports(layer, precision); !verdict.supported) return verdict;
    const CudaOp* op = CudaOpRegistry::instance().find(layer.domain, layer.opType);
    return op->supports ? op->supports(layer, precision, tensors) : SupportVerdict{};
  }

  bool runsDataDependent(const Layer& layer) const override {
    const CudaOp* op = CudaOpRegistry::instance().find(layer.domain, layer.opType);
    return op && op->dataDependent;
  }

  std::vector<Tactic> tactics(const Layer& layer, Precision precision, const LayerInputs& inputs) const override {
    const CudaOp* op = CudaOpRegistry::instance().find(layer.domain, layer.opType);
    std::vector<Tactic> candidates;
    if (op && op->tactics) candidates = op->tactics(layer, precision, inputs, device_);
    if (candidates.empty()) candidates = {Tactic{defaultTacticId(layer)}};
    if (op && op->channelsLastInputs)
      for (Tactic& t : candidates) t.takesChannelsLast = t.takesChannelsLast || !op->channelsLastInputs(layer, t.id).empty();
    return candidates;
  }

  std::unordered_map<std::string, TensorFormat> tensorFormats(const Network& network,
                                                              const std::vector<std::string>& tactics,
                                                              const std::vector<Precision>&) const override {
    return channelsLastTensors(network, tactics);
  }

  std::unique_ptr<Step> instantiate(const Layer& layer, const Tactic& tactic,
                                    const LayerSignature& signature) const override {
    const CudaOp* op = CudaOpRegistry::instance().find(layer.domain, layer.opType);
    if (!op)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": the CUDA backend has no kernel for op '" +
                                                   layer.opType + "'; the plan was made by another Kiln: rebuild it");
    return op->instantiate(layer, tactic, signature, device_);
  }

  DeviceAllocator& allocator() const override { return device_.allocator; }
  std::unique_ptr<Stream> createStream() const override { return std::make_unique<CudaStream>(); }
  std::unique_ptr<Stream> wrapStream(void* native) const override {
    return std::make_unique<CudaStream>(static_cast<cudaStream_t>(native));
  }
  std::unique_ptr<Event> createEvent() const override { return std::make_unique<CudaEvent>(); }
  std::unique_ptr<RecordedWork> record(Stream& stream, const std::function<void()>& work) const override {
    return std::make_unique<CudaGraph>(nativeStream(stream), work);
  }

 private:
  mutable CudaDevice device_;
  std::string libraries_;
};

}  // namespace
}  // namespace kiln::cuda

// The module's one entry point (no C++ types cross dlsym).
extern "C" __attribute__((visibility("default"))) kiln::Backend* kiln_make_cuda_backend() {
  return new kiln::cuda::CudaBackend();
}
