#pragma once
// Float32 2-D max / average pooling through oneDNN, on channels-last data (its fast kernels' layout):
// NCHW inputs and outputs are re-laid out in the workspace, NHWC ones (kept so by the engine between
// oneDNN layers) are used as they are. One primitive per shape, prepared on first use.
#include "../common/prepared_cache.h"
#include "../common/spatial_window.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::kernels {

enum class PoolKind { kMax, kAverageIncludingPadding, kAverageExcludingPadding };

struct PoolShape {
  int64_t batch = 1, channels = 1;
  SpatialWindow window;  // 2-D: the leading axis is 1
  PoolKind kind = PoolKind::kMax;

  bool operator==(const PoolShape&) const = default;
};

class OneDnnPooling {
 public:
  OneDnnPooling(bool xChannelsLast, bool yChannelsLast);
  ~OneDnnPooling();
  OneDnnPooling(const OneDnnPooling&) = delete;
  OneDnnPooling& operator=(const OneDnnPooling&) = delete;

  // Whether oneDNN pools this shape exactly as ONNX does (2-D, float32 sizes within int limits, and
  // for averages that count padding, no ceil-mode overhang past the declared padding).
  static bool supports(const PoolShape& shape);
  // Scratch bytes run() needs (re-laid-out copies and oneDNN's scratchpad; 0 when unsupported).
  uint64_t workspaceBytes(const PoolShape& shape) const;
  // y = pool(x). `workspace(bytes)` returns scratch memory. Safe to call from several threads at once.
  void run(const PoolShape& shape, const float* x, float* y, const std::function<void*(uint64_t)>& workspace);

 private:
  struct Prepared;
  Prepared& prepared(const PoolShape& shape);

  const bool xChannelsLast_, yChannelsLast_;
  PreparedCache<Prepared> prepared_;
};

}  // namespace kiln::kernels
