#pragma once
// The entry points of libkiln_nccl.so (engine_core/src/nccl/), which kiln_core loads the first time
// an NCCL communicator is asked for (runtime/nccl_communicator_factory.cpp). Both sides are built
// together, so C++ types cross them; errors are thrown as kiln::Error.
#include "nccl_unique_id.h"

#include <chrono>

namespace kiln {
class Communicator;
}

namespace kiln::nccl {

struct CommunicatorSetup {
  int rank = 0;
  int worldSize = 1;
  int device = 0;
  std::chrono::milliseconds timeout{60000};
  UniqueId id{};
};

// void kiln_nccl_unique_id(UniqueId* id): a fresh id (ncclGetUniqueId).
inline constexpr const char* kUniqueIdEntry = "kiln_nccl_unique_id";
using UniqueIdEntry = void (*)(UniqueId* id);
// Communicator* kiln_make_nccl_communicator(const CommunicatorSetup*): joins the group; returns
// once every rank has joined.
inline constexpr const char* kMakeCommunicatorEntry = "kiln_make_nccl_communicator";
using MakeCommunicatorEntry = Communicator* (*)(const CommunicatorSetup* setup);

}  // namespace kiln::nccl
