#include "module_loader.h"

#include <kiln/error.h>

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <vector>

namespace kiln {
namespace {

std::vector<std::string> candidatePaths(const std::string& fileName, const char* buildPath) {
  std::vector<std::string> paths;
  if (const char* dir = std::getenv("KILN_BACKEND_DIR")) paths.push_back(std::string(dir) + "/" + fileName);
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::filesystem::path dir = std::filesystem::path(std::string(exe, size_t(n))).parent_path();
    for (const char* relative : {".", "../lib/kiln", "../lib"}) paths.push_back((dir / relative / fileName).string());
  }
  if (buildPath) paths.push_back(buildPath);
  paths.push_back(fileName);  // the loader's own search path last
  return paths;
}

}  // namespace

std::optional<OpenedModule> openKilnModule(const std::string& fileName, const char* buildPath, std::string& why) {
  why.clear();
  for (const std::string& path : candidatePaths(fileName, buildPath)) {
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) continue;
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return OpenedModule{handle, path};
    why = dlerror();
  }
  return std::nullopt;
}

void* moduleSymbol(const OpenedModule& module, const char* symbol, const std::string& whatItShouldBe) {
  if (void* found = dlsym(module.handle, symbol)) return found;
  throw Error(ErrorCode::kUnsupported,
              module.path + " is not " + whatItShouldBe + " (no " + symbol + "); reinstall Kiln");
}

}  // namespace kiln
