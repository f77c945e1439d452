// The entry points kiln_core finds in libkiln_nccl.so (runtime/nccl_module.h).
#include <kiln/error.h>

#include "nccl_communicator.h"

#include <cstring>

namespace {

void checkNccl(ncclResult_t result, const char* doing) {
  if (result != ncclSuccess)
    throw kiln::Error(kiln::ErrorCode::kRuntimeError, std::string("NCCL failed ") + doing + ": " +
                                                          ncclGetErrorString(result) + " (" +
                                                          ncclGetLastError(nullptr) + ")");
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void kiln_nccl_unique_id(kiln::nccl::UniqueId* id) {
  ncclUniqueId fresh;
  checkNccl(ncclGetUniqueId(&fresh), "making a unique id (ncclGetUniqueId)");
  std::memcpy(id->data(), fresh.internal, id->size());
}

extern "C" __attribute__((visibility("default"))) kiln::Communicator* kiln_make_nccl_communicator(
    const kiln::nccl::CommunicatorSetup* setup) {
  return new kiln::nccl::NcclCommunicator(*setup);
}
