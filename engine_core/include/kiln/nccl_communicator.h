#pragma once
// Communicators over NCCL for the collective layers of CUDA engines: one process per GPU, each
// rank joining its group through NCCL's unique id. The id comes from a file (rank 0 makes it and
// writes it atomically; the others wait for it) or from an environment variable a launcher set to
// createNcclUniqueIdHex() for every rank. Collectives run on the caller's CUDA stream over device
// buffers, and each waits for its result with a deadline: a rank that is lost or stalls makes the
// others fail within the timeout with kiln::Error naming the collective, the call, the rank and
// the timeout (the communicator is then aborted), never a silent hang. NCCL lives in its own
// module (libkiln_nccl.so), loaded on first use, so Kiln runs where NCCL is absent.
#include <kiln/communicator.h>

#include <chrono>
#include <memory>
#include <string>

namespace kiln {

// The environment variable createNcclCommunicator reads an id from unless told another.
inline constexpr const char* kNcclIdVariable = "KILN_NCCL_ID";

// Where a rank finds its group's NCCL unique id.
struct NcclIdSource {
  enum class Kind { kFile, kEnvironment };
  Kind kind = Kind::kEnvironment;
  std::string location = kNcclIdVariable;  // the file's path, or the variable's name

  // Rank 0 writes a fresh id to `path` (a temporary file renamed into place) and removes it once
  // every rank has joined; the other ranks wait for it, up to the timeout. Use a path of this run
  // (a file left by a run that crashed before its ranks joined would be read as this run's).
  static NcclIdSource file(std::string path) { return {Kind::kFile, std::move(path)}; }
  // Every rank reads the id (256 hex digits) from `variable`; the process that made it with
  // createNcclUniqueIdHex must live until the ranks have joined (NCCL's rendezvous runs in it).
  static NcclIdSource environment(std::string variable = kNcclIdVariable) {
    return {Kind::kEnvironment, std::move(variable)};
  }
};

// This process's member `rank` of a group of `worldSize` ranks on GPU `device`, which becomes the
// calling thread's current device (the CUDA backend runs on the current device, so call this
// before loading the engine). Joining waits for every rank up to `timeout`, and so does each
// collective from when the work queued before it on the stream has finished. Throws kiln::Error:
// kUnsupported when this Kiln was built without NCCL or libnccl / the GPU is missing,
// kInvalidArgument for a bad rank, size, device or id, kRuntimeError when joining fails or times
// out. Keep NVLink multicast off on machines that do not support it (NCCL_NVLS_ENABLE=0).
std::shared_ptr<Communicator> createNcclCommunicator(int rank, int worldSize, const NcclIdSource& id, int device,
                                                     std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A fresh NCCL unique id as 256 hex digits, for a launcher to give every rank through the
// environment (NcclIdSource::environment).
std::string createNcclUniqueIdHex();

// Empty when this Kiln can make NCCL communicators here (the module and libnccl load), else why not.
std::string ncclUnavailableReason();

}  // namespace kiln
