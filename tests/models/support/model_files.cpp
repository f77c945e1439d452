#include "models/support/model_files.h"

#include <cstdlib>

namespace kiln::test {

std::filesystem::path modelCacheDir() {
  const char* fromEnv = std::getenv("KILN_MODEL_CACHE");
  return (fromEnv && *fromEnv) ? std::filesystem::path(fromEnv) : std::filesystem::path(KILN_MODEL_CACHE_DEFAULT);
}

std::filesystem::path modelPath(const std::string& file) { return modelCacheDir() / file; }

std::string whyModelMissing(const std::string& file) {
  std::error_code ignored;
  if (std::filesystem::is_regular_file(modelPath(file), ignored)) return "";
  return file + " is not in " + modelCacheDir().string() +
         " (the models.fetch fixture could not fetch it: offline?; run scripts/fetch_test_models.sh " +
         modelCacheDir().string() + ")";
}

}  // namespace kiln::test
