// createNcclCommunicator (kiln/nccl_communicator.h): the id handshake here, NCCL itself in
// libkiln_nccl.so, loaded on first use so that Kiln runs where NCCL is absent.
#include <kiln/error.h>
#include <kiln/nccl_communicator.h>

#include "../backends/module_loader.h"
#include "nccl_module.h"

#include <filesystem>
#include <optional>

namespace kiln {
namespace {

struct NcclModule {
  nccl::UniqueIdEntry uniqueId = nullptr;
  nccl::MakeCommunicatorEntry make = nullptr;
  std::string unavailable;  // why the module could not be loaded; empty when it was
};

NcclModule loadModule() {
#ifndef KILN_WITH_NCCL
  return {nullptr, nullptr,
          "this Kiln was built without NCCL (CMake found no nccl.h and libnccl), so CUDA engines cannot run as "
          "several ranks; build Kiln where NCCL is installed"};
#else
  constexpr const char* kModule = "libkiln_nccl.so";
  std::string why;
  const auto module = openKilnModule(kModule, KILN_NCCL_MODULE_BUILD_PATH, why);
  if (!module)
    return {nullptr, nullptr,
            "Kiln's NCCL communicator could not be loaded" +
                (why.empty() ? std::string(" (") + kModule + " not found)" : ": " + why) +
                "; it needs NCCL 2 (libnccl.so.2) and the CUDA runtime on the library path"};
  try {
    return {
        reinterpret_cast<nccl::UniqueIdEntry>(moduleSymbol(*module, nccl::kUniqueIdEntry, "Kiln's NCCL communicator")),
        reinterpret_cast<nccl::MakeCommunicatorEntry>(
            moduleSymbol(*module, nccl::kMakeCommunicatorEntry, "Kiln's NCCL communicator")),
        ""};
  } catch (const Error& e) {
    return {nullptr, nullptr, e.what()};
  }
#endif
}

const NcclModule& ncclModule() {
  static const NcclModule module = loadModule();
  if (!module.unavailable.empty()) throw Error(ErrorCode::kUnsupported, module.unavailable);
  return module;
}

nccl::UniqueId freshId() {
  nccl::UniqueId id{};
  ncclModule().uniqueId(&id);
  return id;
}

// Rank 0's id file goes away once every rank has read it (joining completes only then), whether
// joining succeeded or not, so a later run with the same path never reads this run's id.
class IdFileRemover {
 public:
  explicit IdFileRemover(std::string path) : path_(std::move(path)) {}
  ~IdFileRemover() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }

 private:
  std::string path_;
};

}  // namespace

std::shared_ptr<Communicator> createNcclCommunicator(int rank, int worldSize, const NcclIdSource& source, int device,
                                                     std::chrono::milliseconds timeout) {
  if (worldSize < 1 || rank < 0 || rank >= worldSize)
    throw Error(ErrorCode::kInvalidArgument, "NCCL rank " + std::to_string(rank) + " of " + std::to_string(worldSize) +
                                                 ": the world size must be 1 or more and the rank between 0 and " +
                                                 "the world size - 1");
  if (device < 0)
    throw Error(ErrorCode::kInvalidArgument,
                "NCCL rank " + std::to_string(rank) + ": GPU " + std::to_string(device) + " is not a device ordinal");
  if (timeout.count() <= 0)
    throw Error(ErrorCode::kInvalidArgument,
                "a collective timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  if (source.location.empty())
    throw Error(ErrorCode::kInvalidArgument, std::string("the NCCL id source names no ") +
                                                 (source.kind == NcclIdSource::Kind::kFile ? "file" : "variable"));
  const NcclModule& module = ncclModule();
  nccl::CommunicatorSetup setup{rank, worldSize, device, timeout, {}};
  std::optional<IdFileRemover> removeIdFile;
  if (source.kind == NcclIdSource::Kind::kEnvironment) {
    setup.id = nccl::idFromEnvironment(source.location);
  } else if (rank == 0) {
    setup.id = freshId();
    nccl::publishIdFile(source.location, setup.id);
    removeIdFile.emplace(source.location);
  } else {
    setup.id = nccl::waitForIdFile(source.location, timeout, rank);
  }
  return std::shared_ptr<Communicator>(module.make(&setup));
}

std::string createNcclUniqueIdHex() { return nccl::toHex(freshId()); }

std::string ncclUnavailableReason() {
  try {
    ncclModule();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace kiln
