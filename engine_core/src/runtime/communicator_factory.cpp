// Which communicator the ranks of a split model get, by the backend their plans were built for.
#include <kiln/communicator.h>
#include <kiln/error.h>

namespace kiln {

std::vector<std::shared_ptr<Communicator>> createCommunicators(const std::string& backend, int worldSize,
                                                               std::chrono::milliseconds timeout) {
  if (backend == "cpu" || backend == "cpu-device") return createInProcessCommunicators(worldSize, timeout);
  throw Error(ErrorCode::kUnsupported,
              "running " + std::to_string(worldSize) + " ranks of a " + backend +
                  " plan needs a communicator for its devices (NCCL for CUDA), which Kiln does not have yet; "
                  "tensor-parallel plans run on the CPU backend (kiln build --backend cpu)");
}

}  // namespace kiln
