#pragma once
// Runners over the two things Kiln can execute, for compareRunners: an ONNX network on the
// reference executor, and a built engine.
#include <kiln/compare.h>
#include <kiln/network.h>
#include <kiln/runtime.h>

#include <memory>

namespace kiln {

Runner makeReferenceRunner(std::shared_ptr<const Network> network);
Runner makeEngineRunner(std::shared_ptr<const Engine> engine);

}  // namespace kiln
