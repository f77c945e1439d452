#pragma once
// Builds an optimised engine (a serialized plan) from a Network.
#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/file_io.h>
#include <kiln/logger.h>
#include <kiln/network.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct BuildProgress {
  std::string phase;   // "passes", "precision", "tactics", "memory", "serialize"
  std::string layer;   // layer being worked on, if any
  std::string tactic;  // tactic being timed, if any
  double fraction = 0; // 0..1 over the whole build
};

// Receives progress; returning true from cancelled() stops the build with ErrorCode::kCancelled.
class BuildObserver {
 public:
  virtual ~BuildObserver() = default;
  virtual void progress(const BuildProgress& progress) { (void)progress; }
  virtual bool cancelled() { return false; }
};

struct BuildResult {
  std::vector<uint8_t> plan;
  BuildReport report;
};

// Empty when `backend` can be used on this machine, else one line saying why not (this Kiln has no
// CUDA backend, no GPU or driver, a CUDA library missing) and what to do.
std::string backendUnavailableReason(BackendKind backend);

class Builder {
 public:
  explicit Builder(Logger& logger = silentLogger()) : logger_(logger) {}
  // The network is copied; the caller's stays as it was.
  BuildResult build(const Network& network, const BuilderConfig& config, BuildObserver* observer = nullptr) const;

 private:
  Logger& logger_;
};


}  // namespace kiln
