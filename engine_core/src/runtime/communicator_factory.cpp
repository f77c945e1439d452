// Which communicator the ranks of a split model get, by the backend their plans were built for.
#include <kiln/communicator.h>
#include <kiln/error.h>

namespace kiln {

std::vector<std::shared_ptr<Communicator>> createCommunicators(const std::string& backend, int worldSize,
                                                               std::chrono::milliseconds timeout) {
  if (backend == "cpu" || backend == "cpu-device") return createInProcessCommunicators(worldSize, timeout);
  // One thread per rank cannot run NCCL (one process a GPU): such ranks join through
  // createNcclCommunicator in their own processes, which kiln run / profile do not launch yet.
  throw Error(ErrorCode::kUnsupported,
              "running " + std::to_string(worldSize) + " ranks of a " + backend +
                  " plan needs one process per GPU joined over NCCL (createNcclCommunicator in "
                  "kiln/nccl_communicator.h), which kiln run / profile --ranks do not launch yet; run the "
                  "tensor-parallel plans on the CPU backend (kiln build --backend cpu), or one process per rank "
                  "through the API");
}

}  // namespace kiln
