#pragma once
// Graph passes: each rewrites a Network in place and records what it matched and changed.
// One pass a file. Fusions separate matching from rewriting and keep the guards: the producer has
// a single consumer, the intermediate is not a graph output, and the target backend supports the
// fused layer at the chosen precision.
#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct PassContext {
  BackendKind backend = BackendKind::kCpu;
  int optimizationLevel = 3;
  // Whether the build may run layers in fp16 / bf16 (passes that only pay off there skip others).
  bool halfPrecision = true;
  // Whether the target backend can run this layer (a fused one, say); passes do not create layers
  // it cannot run. Defaults to "yes" (tests; the CPU backend runs everything).
  std::function<bool(const Layer&)> backendSupports;

  // Called by passes for every match they rewrite ("fused Conv 'c1' + Relu 'r1'").
  void note(std::string change) { changes.push_back(std::move(change)); }
  bool supports(const Layer& layer) const { return !backendSupports || backendSupports(layer); }

  std::vector<std::string> changes;  // filled during one pass, moved into its PassRecord
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // Bookkeeping around apply(): layer counts before/after, the changes noted, the time taken.
  PassRecord run(Network& network, PassContext& context);

 private:
  virtual void apply(Network& network, PassContext& context) = 0;
};

class PassManager {
 public:
  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  // Runs every pass in order; re-infers shapes after each so the next one sees typed tensors.
  std::vector<PassRecord> run(Network& network, PassContext& context) const;
  // The passes Kiln runs at an optimisation level (0 = none).
  static PassManager standard(int optimizationLevel);
  // The tensor-parallel split for one rank, after the clean-up it needs (constants folded, no-ops
  // and dead layers gone); the builder runs it before `standard`.
  static PassManager tensorParallelSplit(int worldSize, int rank);

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace kiln
