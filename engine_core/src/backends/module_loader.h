#pragma once
// Finds and opens one of Kiln's run-time modules (the CUDA backend, the NCCL communicator): where
// KILN_BACKEND_DIR says, next to the program, in its ../lib/kiln or ../lib, where the build put it,
// then the dynamic loader's own search path. Modules stay loaded for the life of the process: what
// they make (backends, steps, communicators) lives as long.
#include <optional>
#include <string>

namespace kiln {

struct OpenedModule {
  void* handle = nullptr;
  std::string path;
};

// The first candidate that dlopen accepts; nullopt with `why` set to the last loader error (empty
// when no candidate file existed).
std::optional<OpenedModule> openKilnModule(const std::string& fileName, const char* buildPath, std::string& why);

// `symbol` of `module`; throws kiln::Error(kUnsupported) naming the file when it lacks it.
void* moduleSymbol(const OpenedModule& module, const char* symbol, const std::string& whatItShouldBe);

}  // namespace kiln
