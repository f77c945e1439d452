#include "cudnn_graph.h"

#include "cudnn_conv.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace kiln::cuda {
namespace {

// Engines whose numerics Kiln does not accept: fp16 accumulation, inputs narrowed below their
// type (fp32 to tf32 stays allowed through the graph's compute type), or run-to-run differences.
bool acceptableNumerics(cudnnBackendDescriptor_t engine) {
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes) != CUDNN_STATUS_SUCCESS)
    return true;
  for (int64_t i = 0; i < count; ++i)
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
        notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION ||
        notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)
      return false;
  return true;
}

// The engine id and knobs of a config the heuristics returned; nothing when unreadable.
bool readChoice(cudnnBackendDescriptor_t config, EngineChoice& choice) {
  CudnnDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "reading an engine config");
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t count = 0;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, &choice.engine) !=
          CUDNN_STATUS_SUCCESS)
    return false;
  if (!acceptableNumerics(raw)) return false;
  std::vector<CudnnDescriptor> knobs;
  std::vector<cudnnBackendDescriptor_t> rawKnobs;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    knobs.emplace_back(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, "reading an engine config's knobs");
    rawKnobs.push_back(knobs.back().get());
  }
  int64_t knobCount = 0;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               int64_t(rawKnobs.size()), &knobCount, rawKnobs.data()) != CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < knobCount; ++i) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0, n = 0;
    if (cudnnBackendGetAttribute(rawKnobs[size_t(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n,
                                 &type) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(rawKnobs[size_t(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n,
                                 &value) != CUDNN_STATUS_SUCCESS)
      return false;
    choice.knobs.emplace_back(int64_t(type), value);
  }
  return true;
}

void appendInt(std::vector<uint8_t>& out, int64_t v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

}  // namespace

CudnnDescriptor::CudnnDescriptor(cudnnBackendDescriptorType_t type, const std::string& what) : what_(what) {
  checkCudnn(cudnnBackendCreateDescriptor(type, &d_), what + " (cudnnBackendCreateDescriptor)");
}

CudnnDescriptor::~CudnnDescriptor() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
}

CudnnDescriptor& CudnnDescriptor::operator=(CudnnDescriptor&& other) noexcept {
  if (this != &other) {
    if (d_) cudnnBackendDestroyDescriptor(d_);
    d_ = other.d_;
    what_ = std::move(other.what_);
    other.d_ = nullptr;
  }
  return *this;
}

CudnnDescriptor& CudnnDescriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                      int64_t count, const void* values) {
  checkCudnn(cudnnBackendSetAttribute(d_, name, type, count, values),
             what_ + " (cudnnBackendSetAttribute " + std::to_string(int(name)) + ")");
  return *this;
}
CudnnDescriptor& CudnnDescriptor::setInt(cudnnBackendAttributeName_t name, int64_t value) {
  return set(name, CUDNN_TYPE_INT64, 1, &value);
}
CudnnDescriptor& CudnnDescriptor::setInts(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values) {
  return set(name, CUDNN_TYPE_INT64, int64_t(values.size()), values.data());
}
CudnnDescriptor& CudnnDescriptor::setDescriptor(cudnnBackendAttributeName_t name, const CudnnDescriptor& value) {
  cudnnBackendDescriptor_t raw = value.get();
  return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}
CudnnDescriptor& CudnnDescriptor::setDataType(cudnnBackendAttributeName_t name, cudnnDataType_t type) {
  return set(name, CUDNN_TYPE_DATA_TYPE, 1, &type);
}
CudnnDescriptor& CudnnDescriptor::setFloat(cudnnBackendAttributeName_t name, float value) {
  return set(name, CUDNN_TYPE_FLOAT, 1, &value);
}
CudnnDescriptor& CudnnDescriptor::setDouble(cudnnBackendAttributeName_t name, double value) {
  return set(name, CUDNN_TYPE_DOUBLE, 1, &value);
}

void CudnnDescriptor::finalize() { checkCudnn(cudnnBackendFinalize(d_), what_ + " (cudnnBackendFinalize)"); }

bool CudnnDescriptor::tryFinalize() { return cudnnBackendFinalize(d_) == CUDNN_STATUS_SUCCESS; }

CudnnDescriptor cudnnTensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& strides, int64_t alignment, bool isVirtual,
                            const std::string& what) {
  CudnnDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
  t.setDataType(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
      .setInts(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
      .setInts(CUDNN_ATTR_TENSOR_STRIDES, strides)
      .setInt(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
      .setInt(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment);
  if (isVirtual) {
    const bool yes = true;
    t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
  }
  t.finalize();
  return t;
}

CudnnDescriptor cudnnScalarByValue(int64_t uid, const std::string& what) {
  CudnnDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
  const std::vector<int64_t> one{1, 1, 1, 1};
  const bool yes = true;
  t.setDataType(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_DATA_FLOAT)
      .setInts(CUDNN_ATTR_TENSOR_DIMENSIONS, one)
      .setInts(CUDNN_ATTR_TENSOR_STRIDES, one)
      .setInt(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
      .setInt(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, int64_t(sizeof(float)))
      .set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
  t.finalize();
  return t;
}

int64_t alignmentOf(std::initializer_list<const void*> pointers) {
  uintptr_t bits = 16;
  for (const void* p : pointers)
    if (p) bits |= reinterpret_cast<uintptr_t>(p);
  return int64_t(bits & (~bits + 1));
}

std::vector<int64_t> linearStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

std::vector<int64_t> channelsLastStrides(const std::vector<int64_t>& dims) {
  // Memory order N, spatial..., C.
  std::vector<int64_t> strides(dims.size(), 1);
  if (dims.size() < 3) return linearStrides(dims);
  int64_t step = dims[1];
  for (size_t d = dims.size() - 1; d >= 2; --d) {
    strides[d] = step;
    step *= dims[d];
  }
  strides[1] = 1;
  strides[0] = step;
  return strides;
}

std::string EngineChoice::describe() const {
  std::string s = "engine " + std::to_string(engine);
  for (size_t i = 0; i < knobs.size(); ++i)
    s += (i ? "," : " knobs ") + std::to_string(knobs[i].first) + "=" + std::to_string(knobs[i].second);
  return s;
}

std::vector<uint8_t> EngineChoice::serialize() const {
  std::vector<uint8_t> out;
  appendInt(out, engine);
  appendInt(out, int64_t(knobs.size()));
  for (const auto& [type, value] : knobs) {
    appendInt(out, type);
    appendInt(out, value);
  }
  return out;
}

EngineChoice EngineChoice::deserialize(const std::vector<uint8_t>& bytes, const std::string& what) {
  size_t at = 0;
  auto next = [&]() {
    if (at + sizeof(int64_t) > bytes.size())
      throw Error(ErrorCode::kInvalidArgument, what + ": the plan's cuDNN engine choice is cut short; rebuild the plan");
    int64_t v = 0;
    std::memcpy(&v, bytes.data() + at, sizeof v);
    at += sizeof v;
    return v;
  };
  EngineChoice c;
  c.engine = next();
  const int64_t n = next();
  if (n < 0 || n > CUDNN_KNOB_TYPE_COUNTS)
    throw Error(ErrorCode::kInvalidArgument, what + ": the plan's cuDNN engine choice is corrupt; rebuild the plan");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t type = next();
    c.knobs.emplace_back(type, next());
  }
  return c;
}

CudnnOperationGraph::CudnnOperationGraph(cudnnHandle_t handle, std::vector<CudnnDescriptor> operations,
                                         std::vector<CudnnDescriptor> parts, const std::string& what)
    : operations_(std::move(operations)), parts_(std::move(parts)), graph_(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what), handle_(handle),
      what_(what) {
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const auto& op : operations_) raw.push_back(op.get());
  graph_.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(raw.size()), raw.data());
  graph_.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
  graph_.finalize();
}

std::vector<EngineChoice> CudnnOperationGraph::heuristicChoices(int mode) const {
  std::vector<EngineChoice> out;
  CudnnDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what_ + ": cuDNN's heuristics");
  heuristics.setDescriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph_);
  const auto heurMode = cudnnBackendHeurMode_t(mode);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heurMode);
  if (!heuristics.tryFinalize()) return out;
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                               &count, nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return out;
  std::vector<CudnnDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, what_ + ": an engine config");
    raw.push_back(configs.back().get());
  }
  int64_t returned = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                               &returned, raw.data()) != CUDNN_STATUS_SUCCESS)
    return out;
  for (int64_t i = 0; i < returned; ++i) {
    EngineChoice choice;
    if (readChoice(raw[size_t(i)], choice)) out.push_back(std::move(choice));
  }
  return out;
}

std::vector<EngineChoice> CudnnOperationGraph::rankedEngines(size_t limit) const {
  // Modes A and B rank differently (B is slower to ask, and better on some fused graphs); taking
  // their lists in turn puts both first picks among the candidates timed. FALLBACK fills the rest.
  const std::vector<EngineChoice> lists[] = {heuristicChoices(CUDNN_HEUR_MODE_A), heuristicChoices(CUDNN_HEUR_MODE_B)};
  std::vector<EngineChoice> out;
  auto take = [&](const EngineChoice& choice) {
    if (out.size() < limit && std::find(out.begin(), out.end(), choice) == out.end()) out.push_back(choice);
  };
  for (size_t rank = 0; out.size() < limit && (rank < lists[0].size() || rank < lists[1].size()); ++rank)
    for (const auto& list : lists)
      if (rank < list.size()) take(list[rank]);
  if (out.size() < limit)
    for (const EngineChoice& choice : heuristicChoices(CUDNN_HEUR_MODE_FALLBACK)) take(choice);
  return out;
}

CudnnExecutionPlan CudnnExecutionPlan::make(cudnnHandle_t handle, const CudnnOperationGraph& graph,
                                            const EngineChoice& choice) {
  CudnnExecutionPlan result;
  const std::string what = graph.what() + " with cuDNN " + choice.describe();
  CudnnDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, what);
  engine.setDescriptor(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph.get()).setInt(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, choice.engine);
  if (!engine.tryFinalize()) return result;
  std::vector<CudnnDescriptor> knobs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const auto& [type, value] : choice.knobs) {
    CudnnDescriptor knob(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, what);
    const auto knobType = cudnnBackendKnobType_t(type);
    knob.set(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &knobType)
        .setInt(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, value);
    if (!knob.tryFinalize()) return result;
    raw.push_back(knob.get());
    knobs.push_back(std::move(knob));
  }
  CudnnDescriptor config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, what);
  config.setDescriptor(CUDNN_ATTR_ENGINECFG_ENGINE, engine);
  if (!raw.empty())
    config.set(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(raw.size()), raw.data());
  if (!config.tryFinalize()) return result;
  CudnnDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, what);
  plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
      .setDescriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
  if (!plan.tryFinalize()) return result;
  int64_t workspace = 0, n = 0;
  checkCudnn(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                      &workspace),
             what + " (its workspace size)");
  result.plan_ = std::move(plan);
  result.workspace_ = uint64_t(std::max<int64_t>(0, workspace));
  result.choice_ = choice;
  return result;
}

void CudnnExecutionPlan::execute(cudnnHandle_t handle, const std::vector<int64_t>& uids,
                                 const std::vector<void*>& pointers, void* workspace, const std::string& what) const {
  // The variant pack is made per launch (a few microseconds): pointers change between contexts.
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t status = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (status == CUDNN_STATUS_SUCCESS)
    status = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()),
                                      uids.data());
  if (status == CUDNN_STATUS_SUCCESS)
    status = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                      int64_t(pointers.size()), pointers.data());
  if (status == CUDNN_STATUS_SUCCESS)
    status = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  if (status == CUDNN_STATUS_SUCCESS) status = cudnnBackendFinalize(pack);
  if (status == CUDNN_STATUS_SUCCESS) status = cudnnBackendExecute(handle, plan_.get(), pack);
  if (pack) cudnnBackendDestroyDescriptor(pack);
  if (status != CUDNN_STATUS_SUCCESS) checkCudnn(status, what + ": cudnnBackendExecute with " + choice_.describe());
}

namespace {

// Graphs and plans by what they compute, per thread; refusals too (null).
struct PlanCache {
  std::map<std::string, std::shared_ptr<CudnnOperationGraph>> graphs;
  std::map<std::string, std::shared_ptr<CudnnExecutionPlan>> plans;
};
PlanCache& planCache() {
  thread_local PlanCache cache;
  return cache;
}

std::string handleKey(cudnnHandle_t handle) { return std::to_string(reinterpret_cast<uintptr_t>(handle)); }

}  // namespace

std::shared_ptr<CudnnOperationGraph> cachedGraph(cudnnHandle_t handle, const std::string& key,
                                                 const std::function<std::unique_ptr<CudnnOperationGraph>()>& make) {
  auto& graphs = planCache().graphs;
  const std::string fullKey = handleKey(handle) + key;
  if (auto it = graphs.find(fullKey); it != graphs.end()) return it->second;
  std::shared_ptr<CudnnOperationGraph> graph;
  try {
    graph = make();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported) throw;
  }
  return graphs[fullKey] = graph;
}

std::shared_ptr<CudnnExecutionPlan> cachedPlan(cudnnHandle_t handle, const CudnnOperationGraph& graph,
                                               const std::string& key, const EngineChoice& choice) {
  auto& plans = planCache().plans;
  const std::string fullKey = handleKey(handle) + key + choice.describe();
  if (auto it = plans.find(fullKey); it != plans.end()) return it->second;
  auto plan = std::make_shared<CudnnExecutionPlan>(CudnnExecutionPlan::make(handle, graph, choice));
  return plans[fullKey] = plan->empty() ? nullptr : plan;
}

}  // namespace kiln::cuda
