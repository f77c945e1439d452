#include "cpu_kernel.h"

#include "../../ops/op_families.h"
#include "../../ops/op_schema.h"
#include "dispatch.h"

#include <cstring>
#include <new>

namespace kiln {

namespace detail {
void throwUnsupportedType(DataType type, const char* family) {
  throw Error(ErrorCode::kUnsupported,
              "data type " + std::string(toString(type)) + " is not supported here (expected a " + family + " type)");
}
}  // namespace detail

KernelContext::KernelContext(const Layer& layer, std::vector<const Value*> inputs, std::vector<Tensor> inferred,
                             SubgraphRunner subgraphRunner)
    : layer_(layer),
      inputs_(std::move(inputs)),
      inferred_(std::move(inferred)),
      subgraphRunner_(std::move(subgraphRunner)) {
  outputs_.resize(layer.outputs.size());
}

const Value& KernelContext::inputValue(size_t i) const {
  if (!hasInput(i)) fail("input " + std::to_string(i) + " is required but missing");
  return *inputs_[i];
}

const HostTensor& KernelContext::input(size_t i) const {
  const Value& v = inputValue(i);
  if (v.isSequence() || !v.hasElement)
    fail("input " + std::to_string(i) + " ('" + layer_.inputs[i] + "') must be a tensor, got a " +
         std::string(toString(v.kind)));
  return v.tensor;
}

HostTensor& KernelContext::allocateOutput(size_t i) {
  const Tensor& info = inferred_.at(i);
  if (!info.shape.isFullyKnown())
    fail("output " + std::to_string(i) + " has shape " + info.shape.toString() + " that is not known before running");
  return allocateOutput(i, info.dtype, info.shape.knownDims());
}

HostTensor& KernelContext::allocateOutput(size_t i, DataType dtype, std::vector<int64_t> dims) {
  if (allocator_) {
    HostTensor planned = allocator_(i, dtype, dims);
    if (!planned.empty()) {
      outputs_.at(i) = Value(std::move(planned));
      return outputs_[i].tensor;
    }
  }
  outputs_.at(i) = Value(HostTensor(dtype, std::move(dims)));
  return outputs_[i].tensor;
}

HostTensor& KernelContext::allocateZeroedOutput(size_t i) {
  HostTensor& t = allocateOutput(i);
  if (t.dtype() != DataType::kString) std::memset(t.rawData(), 0, t.byteSize());
  return t;
}

HostTensor& KernelContext::allocateZeroedOutput(size_t i, DataType dtype, std::vector<int64_t> dims) {
  HostTensor& t = allocateOutput(i, dtype, std::move(dims));
  if (t.dtype() != DataType::kString) std::memset(t.rawData(), 0, t.byteSize());
  return t;
}

void KernelContext::setOutput(size_t i, HostTensor tensor) { outputs_.at(i) = Value(std::move(tensor)); }

void KernelContext::setOutputValue(size_t i, Value value) { outputs_.at(i) = std::move(value); }

void* KernelContext::workspace(uint64_t bytes) {
  if (bytes <= workspaceBytes_) return workspace_;
  ownedWorkspace_ = std::make_unique<float[]>((bytes + sizeof(float) - 1) / sizeof(float));
  return ownedWorkspace_.get();
}

void KernelContext::fail(const std::string& why) const {
  throw Error(ErrorCode::kRuntimeError, layer_.describe() + ": " + why);
}

void runKernel(const CpuKernelFn& kernel, KernelContext& ctx) {
  try {
    kernel(ctx);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    ctx.fail("out of memory");
  } catch (const std::exception& e) {
    ctx.fail(e.what());
  }
}

const CpuKernelFn& cpuKernelFor(const Layer& layer) {
  const CpuKernelFn* kernel = CpuKernelRegistry::instance().find(layer.domain, layer.opType);
  if (!kernel || !OpSchemaRegistry::instance().find(layer.domain, layer.opType))
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": op '" + layer.opType + "' (domain '" +
                                             (layer.domain.empty() ? "ai.onnx" : layer.domain) +
                                             "') is not supported by the CPU backend");
  return *kernel;
}

const CpuKernelRegistry& CpuKernelRegistry::instance() {
  static const CpuKernelRegistry registry = [] {
    CpuKernelRegistry r;
#define KILN_REGISTER_FAMILY(Family) register##Family##CpuKernels(r);
    KILN_OP_FAMILIES(KILN_REGISTER_FAMILY)
#undef KILN_REGISTER_FAMILY
    return r;
  }();
  return registry;
}

void CpuKernelRegistry::addTactic(const std::string& domain, const std::string& opType, CpuTactic tactic) {
  if (auto* list = tactics_.find(domain, opType)) list->push_back(std::move(tactic));
  else tactics_.add(domain, opType, {std::move(tactic)});
}

const std::vector<CpuTactic>& CpuKernelRegistry::tactics(const std::string& domain, const std::string& opType) const {
  static const std::vector<CpuTactic> none;
  const auto* list = tactics_.find(domain, opType);
  return list ? *list : none;
}

const CpuTactic* CpuKernelRegistry::findTactic(const std::string& domain, const std::string& opType,
                                               const std::string& tacticId) const {
  for (const auto& t : tactics(domain, opType))
    if (t.id == tacticId) return &t;
  return nullptr;
}

}  // namespace kiln
