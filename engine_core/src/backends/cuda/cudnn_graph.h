#pragma once
// cuDNN 9's graph (backend) API, the little of it Kiln needs: descriptors that free themselves,
// tensors, operation graphs, the heuristics' ranked engine configs, execution plans and their
// launch. An engine config is kept as an EngineChoice (engine id + knob values), so a plan file
// can name the exact config a build timed and a load can rebuild it without asking the heuristics.
#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

// One backend descriptor, destroyed with the object.
class CudnnDescriptor {
 public:
  CudnnDescriptor() = default;
  CudnnDescriptor(cudnnBackendDescriptorType_t type, const std::string& what);
  ~CudnnDescriptor();
  CudnnDescriptor(CudnnDescriptor&& other) noexcept : d_(other.d_) { other.d_ = nullptr; }
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept;
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  explicit operator bool() const { return d_ != nullptr; }

  // Sets attribute `name` to `count` values of `type`; throws naming `what_` on failure.
  CudnnDescriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                       const void* values);
  CudnnDescriptor& setInt(cudnnBackendAttributeName_t name, int64_t value);
  CudnnDescriptor& setInts(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values);
  CudnnDescriptor& setDescriptor(cudnnBackendAttributeName_t name, const CudnnDescriptor& value);
  CudnnDescriptor& setDataType(cudnnBackendAttributeName_t name, cudnnDataType_t type);
  CudnnDescriptor& setFloat(cudnnBackendAttributeName_t name, float value);
  CudnnDescriptor& setDouble(cudnnBackendAttributeName_t name, double value);
  // Finalizes it; throws (kUnsupported for CUDNN_STATUS_NOT_SUPPORTED) naming `what_`.
  void finalize();
  // The same, returning false instead of throwing when cuDNN refuses (candidate configs).
  bool tryFinalize();

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
  std::string what_;
};

// A tensor: dims and strides in cuDNN's logical order (N, C, spatial...), a unique id the
// variant pack binds a pointer to, and the byte alignment that pointer will have.
CudnnDescriptor cudnnTensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& strides, int64_t alignment, bool isVirtual,
                            const std::string& what);

// A float32 scalar passed by value: the variant pack binds a host pointer to it, read at launch.
CudnnDescriptor cudnnScalarByValue(int64_t uid, const std::string& what);

// The largest power of two up to 16 that divides every pointer (the alignment a graph states).
int64_t alignmentOf(std::initializer_list<const void*> pointers);

// Strides of a dense tensor [N, C, spatial...] stored channels-last (N, spatial..., C) or linear.
std::vector<int64_t> channelsLastStrides(const std::vector<int64_t>& dims);
std::vector<int64_t> linearStrides(const std::vector<int64_t>& dims);

// An engine config by value: the engine's global index and its knob settings.
struct EngineChoice {
  int64_t engine = -1;
  std::vector<std::pair<int64_t, int64_t>> knobs;  // (cudnnBackendKnobType_t, value)

  std::string describe() const;  // "engine 7 knobs 3=1,11=0"
  std::vector<uint8_t> serialize() const;
  static EngineChoice deserialize(const std::vector<uint8_t>& bytes, const std::string& what);
  bool operator==(const EngineChoice&) const = default;
};

// A finalized operation graph.
class CudnnOperationGraph {
 public:
  // `parts`: the tensors and op descriptors the operations refer to, kept alive with the graph.
  CudnnOperationGraph(cudnnHandle_t handle, std::vector<CudnnDescriptor> operations,
                      std::vector<CudnnDescriptor> parts, const std::string& what);
  const CudnnDescriptor& get() const { return graph_; }
  // The heuristics' engine configs (modes A and B in turn, then FALLBACK, duplicates dropped),
  // best first; at most `limit`.
  std::vector<EngineChoice> rankedEngines(size_t limit) const;
  const std::string& what() const { return what_; }

 private:
  // One heuristics mode's configs (a cudnnBackendHeurMode_t), best first.
  std::vector<EngineChoice> heuristicChoices(int mode) const;
  std::vector<CudnnDescriptor> operations_, parts_;  // kept alive: the graph refers to them
  CudnnDescriptor graph_;
  cudnnHandle_t handle_;
  std::string what_;
};

// An execution plan of one engine config on one operation graph.
class CudnnExecutionPlan {
 public:
  // Nothing (empty()) when cuDNN refuses this config for the graph.
  static CudnnExecutionPlan make(cudnnHandle_t handle, const CudnnOperationGraph& graph, const EngineChoice& choice);
  bool empty() const { return !plan_; }
  uint64_t workspaceBytes() const { return workspace_; }
  const EngineChoice& choice() const { return choice_; }
  // Enqueues it on the handle's stream with these tensors bound (ids and pointers in pairs).
  void execute(cudnnHandle_t handle, const std::vector<int64_t>& uids, const std::vector<void*>& pointers,
               void* workspace, const std::string& what) const;

 private:
  CudnnDescriptor plan_;
  uint64_t workspace_ = 0;
  EngineChoice choice_;
};

// Graphs and plans made once on this thread (cuDNN handles are per thread), by what they compute
// (`key`: the problem's full description): repeated blocks of a model, the builder's timing runs
// and the engine's steps share them (runtime-fusion engines compile their kernels when a plan is
// made). Refusals are kept too: null where `make` throws kUnsupported or cuDNN refuses the config.
std::shared_ptr<CudnnOperationGraph> cachedGraph(cudnnHandle_t handle, const std::string& key,
                                                 const std::function<std::unique_ptr<CudnnOperationGraph>()>& make);
std::shared_ptr<CudnnExecutionPlan> cachedPlan(cudnnHandle_t handle, const CudnnOperationGraph& graph,
                                               const std::string& key, const EngineChoice& choice);

}  // namespace kiln::cuda
