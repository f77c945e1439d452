#pragma once
// The pieces the oneDNN-backed kernels share (convolution, matmul): the CPU engine, the OpenMP
// team size, Kiln's fused epilogue as oneDNN post-ops, and constant weights re-laid out once.
#include "../fused/epilogue.h"

#include <dnnl.hpp>

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::kernels::onednn {

dnnl::engine& cpuEngine();

// oneDNN runs on OpenMP threads: give the calling thread's team as many as Kiln's parallelFor uses.
void matchThreadCount();

// The epilogue's activation and residual as post-ops: act(y + residual) is sum then eltwise,
// act(y) + residual the reverse. The sum adds what the destination holds before the primitive runs.
dnnl::post_ops epiloguePostOps(const Epilogue& epilogue);

// Whether two epilogues make the same post-ops (their data pointers change from call to call).
bool sameEpilogueKind(const Epilogue& a, const Epilogue& b);

inline uint64_t aligned(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

// A reorder primitive from one memory layout to another on the CPU engine (activations and
// weights into and out of the layouts oneDNN's kernels chose).
inline dnnl::reorder reorderBetween(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  return dnnl::reorder(dnnl::reorder::primitive_desc(cpuEngine(), from, cpuEngine(), to));
}

// oneDNN memory over a caller's buffer (oneDNN takes non-const pointers; inputs are only read).
inline dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data) {
  return dnnl::memory(desc, cpuEngine(), const_cast<void*>(data));
}

// The workspace `plan()` works out for the current team size, or 0 when oneDNN has no kernel for
// the shape (the run then throws, saying so).
template <class Plan>
uint64_t plannedBytesOrZero(Plan&& plan) {
  matchThreadCount();  // scratchpads are sized per thread
  try {
    return plan();
  } catch (const std::exception&) {
    return 0;
  }
}

// Buffers placed one after another in a workspace, each 64-byte aligned.
class ScratchLayout {
 public:
  // The offset of a new buffer of `bytes`.
  uint64_t add(uint64_t bytes) {
    const uint64_t offset = total_;
    total_ += aligned(bytes);
    return offset;
  }
  uint64_t total() const { return total_; }

 private:
  uint64_t total_ = 0;
};

// Constant weights in the layouts the primitives asked for, each made once from the plain weights
// and shared by every primitive (shape) that wants the same layout. Thread-safe.
class PackedWeights {
 public:
  dnnl::memory get(const dnnl::memory& plain, const dnnl::memory::desc& packed);

 private:
  std::mutex mutex_;
  std::vector<dnnl::memory> packed_;
};

}  // namespace kiln::kernels::onednn
