#include "cpu_kernel.h"

#include "../../ops/op_families.h"
#include "dispatch.h"

#include <cstring>

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

namespace {
std::string key(const std::string& domain, const std::string& opType) {
  return (domain == "ai.onnx" ? std::string() : domain) + "::" + opType;
}
}  // namespace

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

const CpuKernelFn* CpuKernelRegistry::find(const std::string& domain, const std::string& opType) const {
  auto it = kernels_.find(key(domain, opType));
  return it == kernels_.end() ? nullptr : &it->second;
}

void CpuKernelRegistry::add(const std::string& domain, const std::string& opType, CpuKernelFn fn) {
  kernels_[key(domain, opType)] = std::move(fn);
}

void CpuKernelRegistry::addTactic(const std::string& domain, const std::string& opType, CpuTactic tactic) {
  tactics_[key(domain, opType)].push_back(std::move(tactic));
}

const std::vector<CpuTactic>& CpuKernelRegistry::tactics(const std::string& domain, const std::string& opType) const {
  static const std::vector<CpuTactic> none;
  auto it = tactics_.find(key(domain, opType));
  return it == tactics_.end() ? none : it->second;
}

const CpuTactic* CpuKernelRegistry::findTactic(const std::string& domain, const std::string& opType,
                                               const std::string& tacticId) const {
  for (const auto& t : tactics(domain, opType))
    if (t.id == tacticId) return &t;
  return nullptr;
}

}  // namespace kiln
