#include "cpu_step.h"

#include <kiln/error.h>

#include "../../runtime/host_execution.h"
#include "../../runtime/precision_convert.h"

#include <cstring>
#include <new>

namespace kiln {
namespace {

constexpr uint64_t kScratchAlignment = 64;

uint64_t alignUp(uint64_t v) { return (v + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment; }

bool isNarrowFloat(DataType t) { return t == DataType::kFloat16 || t == DataType::kBFloat16; }

// Whether the kernel sees this tensor in another type than its memory holds: fp16/bf16 storage of
// a float32 tensor, which the step widens (inputs) or narrows (outputs).
bool convertsStorage(const TensorView& view, const Tensor* logical) {
  return logical && view.present() && !view.object && isNarrowFloat(view.dtype) &&
         logical->dtype == DataType::kFloat32;
}

class CpuStepState : public StepState {
 public:
  SubgraphRunCache subgraphs;  // the bodies of an If/Loop/Scan, across runs of this context
};

// Stores a kernel's output tensor in the bound memory: a copy, or a narrowing to fp16/bf16.
void storeOutput(const Layer& layer, size_t index, const HostTensor& produced, const TensorView& out) {
  if (produced.rawData() == out.data && produced.dtype() == out.dtype) return;  // written in place
  if (produced.dtype() == out.dtype) {
    if (produced.byteSize()) std::memmove(out.data, produced.rawData(), produced.byteSize());
    return;
  }
  if (produced.dtype() == DataType::kFloat32 && isNarrowFloat(out.dtype)) {
    convertFloatStorage(DataType::kFloat32, produced.rawData(), out.dtype, out.data, produced.elementCount());
    return;
  }
  throw Error(ErrorCode::kInternal, layer.describe() + ": output " + std::to_string(index) + " was computed as " +
                                        std::string(toString(produced.dtype())) + " but its memory holds " +
                                        std::string(toString(out.dtype)));
}

}  // namespace

CpuStep::CpuStep(const Layer& layer, Tactic tactic, const KernelFactory& makeKernel, const CpuTactic* source,
                 LayerSignature signature)
    : layer_(layer),
      tactic_(std::move(tactic)),
      source_(source),
      signature_(std::move(signature)),
      outerNames_(subgraphReferences(layer)) {
  // Weights the plan stores narrowed (fp16 for fp16 layers) are widened once: CPU kernels compute
  // in the tensor's declared type.
  weights_.resize(signature_.inputs.size());
  for (size_t i = 0; i < signature_.inputs.size(); ++i) {
    const Tensor* t = signature_.inputs[i];
    if (!t || !t->isConstant()) continue;
    const HostTensor& stored = *t->constant;
    weights_[i] = t->dtype == DataType::kFloat32 && isNarrowFloat(stored.dtype()) ? widenToFloat32(stored) : stored;
  }
  LayerWeights weights(weights_.size(), nullptr);
  for (size_t i = 0; i < weights_.size(); ++i)
    if (weights_[i]) weights[i] = &*weights_[i];
  kernel_ = makeKernel(weights);
}

uint64_t CpuStep::tacticWorkspace(std::span<const TensorView> inputs) const {
  if (!source_ || !source_->workspaceBytes) return 0;
  LayerShapes dims;
  for (size_t i = 0; i < layer_.inputs.size() && i < inputs.size(); ++i)
    dims.push_back(inputs[i].present() && !inputs[i].object ? inputs[i].dims : std::vector<int64_t>{});
  std::lock_guard lock(workspaceMutex_);
  if (!workspaceKnown_ || dims != workspaceDims_) {
    workspace_ = source_->workspaceBytes(layer_, dims);
    workspaceDims_ = std::move(dims);
    workspaceKnown_ = true;
  }
  return workspace_;
}

uint64_t CpuStep::workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const {
  const uint64_t tactic = tacticWorkspace(inputs);
  uint64_t bytes = 0;  // for storage conversions, after the tactic's own scratch
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t outer = i - layer_.inputs.size();
    const Tensor* logical = i < layer_.inputs.size()      ? signature_.inputs[i]
                            : outer < signature_.outerReads.size() ? signature_.outerReads[outer]
                                                                   : nullptr;
    if (!inputs[i].isConstant && convertsStorage(inputs[i], logical))
      bytes += alignUp(uint64_t(inputs[i].elementCount()) * 4);
  }
  for (size_t i = 0; i < outputs.size() && i < signature_.outputs.size(); ++i)
    if (outputs[i].shapeKnown && convertsStorage(outputs[i], signature_.outputs[i]))
      bytes += alignUp(uint64_t(outputs[i].elementCount()) * 4);
  return bytes ? alignUp(tactic) + bytes : tactic;
}

std::unique_ptr<StepState> CpuStep::createState() const {
  if (outerNames_.empty() && !hasSubgraphs(layer_)) return nullptr;
  return std::make_unique<CpuStepState>();
}

void CpuStep::enqueue(const StepArgs& args, Stream&) const {
  const size_t inputCount = layer_.inputs.size();
  if (args.inputs.size() < inputCount + outerNames_.size() || args.outputs.size() != layer_.outputs.size())
    throw Error(ErrorCode::kInternal, layer_.describe() + ": bound with the wrong number of tensors");
  char* scratch = static_cast<char*>(args.workspace) + alignUp(tacticWorkspace(args.inputs));
  char* scratchEnd = static_cast<char*>(args.workspace) + args.workspaceBytes;
  auto takeScratch = [&](int64_t floats) {
    char* p = scratch;
    scratch += alignUp(uint64_t(floats) * 4);
    if (scratch > scratchEnd)
      throw Error(ErrorCode::kInternal, layer_.describe() + ": the workspace is smaller than the step asked for");
    return p;
  };

  // Inputs as the kernel reads them.
  std::vector<Value> values(inputCount + outerNames_.size());
  std::vector<const Value*> inputs(inputCount, nullptr);
  auto valueOf = [&](size_t i, const Tensor* logical) -> const Value* {
    const TensorView& view = args.inputs[i];
    if (i < inputCount && weights_[i] && !weights_[i]->empty()) return &(values[i] = Value(*weights_[i]));
    if (!view.present()) return nullptr;
    if (view.object) return view.object;
    if (convertsStorage(view, logical)) {
      void* wide = takeScratch(view.elementCount());
      convertFloatStorage(view.dtype, view.data, DataType::kFloat32, wide, view.elementCount());
      return &(values[i] = Value(HostTensor::view(DataType::kFloat32, view.dims, nullptr, wide)));
    }
    return &(values[i] = Value(HostTensor::view(view.dtype, view.dims, nullptr, view.data)));
  };
  for (size_t i = 0; i < inputCount; ++i) inputs[i] = valueOf(i, signature_.inputs[i]);
  std::vector<const Value*> outer(outerNames_.size());
  for (size_t k = 0; k < outerNames_.size(); ++k)
    outer[k] = valueOf(inputCount + k, k < signature_.outerReads.size() ? signature_.outerReads[k] : nullptr);

  // Output types and memory: the bound views, or fp32 scratch where the memory holds fp16/bf16.
  std::vector<Tensor> outputTypes(layer_.outputs.size());
  std::vector<void*> kernelMemory(layer_.outputs.size(), nullptr);
  for (size_t i = 0; i < layer_.outputs.size(); ++i) {
    const Tensor* logical = signature_.outputs[i];
    if (!logical) continue;
    const TensorView& out = args.outputs[i];
    outputTypes[i] = *logical;
    if (!out.shapeKnown || out.object) continue;  // the kernel allocates; stored below
    outputTypes[i].shape = Shape::fromDims(out.dims);
    kernelMemory[i] = convertsStorage(out, logical) ? takeScratch(out.elementCount()) : out.data;
  }
  std::vector<DataType> kernelTypes;
  for (const Tensor& t : outputTypes) kernelTypes.push_back(t.dtype);
  auto outputMemory = [&](size_t i, DataType dtype, const std::vector<int64_t>& dims) -> HostTensor {
    if (i >= kernelMemory.size() || !kernelMemory[i] || dims != args.outputs[i].dims || dtype != kernelTypes[i])
      return {};  // not what was bound: the kernel's own tensor is copied in below
    return HostTensor::view(dtype, dims, nullptr, kernelMemory[i]);
  };

  CpuStepState* state = static_cast<CpuStepState*>(args.state);
  const auto outerLookup = [&](const std::string& name) -> const Value* {
    for (size_t k = 0; k < outerNames_.size(); ++k)
      if (outerNames_[k] == name) return outer[k];
    return nullptr;
  };
  KernelContext ctx(layer_, inputs, std::move(outputTypes),
                    [&](const Network& body, const std::vector<Value>& bodyInputs) {
                      if (!state) throw Error(ErrorCode::kInternal, layer_.describe() + ": no state for its subgraphs");
                      return executeGraphCached(body, bodyInputs, outerLookup, {}, state->subgraphs);
                    });
  ctx.setOutputAllocator(outputMemory);
  ctx.setWorkspace(args.workspace, tacticWorkspace(args.inputs));
  ctx.setCommunicator(args.communicator);
  runKernel(kernel_, ctx);

  for (size_t i = 0; i < layer_.outputs.size(); ++i) {
    if (layer_.outputs[i].empty()) continue;
    Value& produced = ctx.outputs()[i];
    TensorView& out = args.outputs[i];
    if (out.object) {
      // A sequence may hold views of this step's inputs, whose memory later steps reuse: keep copies.
      for (HostTensor& t : produced.sequence)
        if (!t.ownsMemory()) t = t.clone();
      if (!produced.isSequence() && produced.hasElement && !produced.tensor.empty() && !produced.tensor.ownsMemory())
        produced.tensor = produced.tensor.clone();
      *out.object = std::move(produced);
      continue;
    }
    if (produced.isSequence() || !produced.hasElement || produced.tensor.empty())
      throw Error(ErrorCode::kInternal, layer_.describe() + ": the kernel did not produce output " + std::to_string(i));
    const HostTensor& tensor = produced.tensor;
    if (!out.shapeKnown) {
      if (!args.outputAllocator)
        throw Error(ErrorCode::kInternal, layer_.describe() + ": output " + std::to_string(i) +
                                              " depends on data but the step got no output allocator");
      out.data = args.outputAllocator->allocate(i, out.dtype, tensor.dims());
      out.dims = tensor.dims();
      out.shapeKnown = true;
    } else if (tensor.dims() != out.dims) {
      throw Error(ErrorCode::kInternal, layer_.describe() + ": output " + std::to_string(i) + " came out " +
                                            dimsToString(tensor.dims()) + " but shape inference said " +
                                            dimsToString(out.dims));
    }
    storeOutput(layer_, i, tensor, out);
  }
}

}  // namespace kiln
