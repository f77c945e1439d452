#pragma once
// Where the real models live: scripts/fetch_test_models.sh caches them (ctest's models.fetch
// fixture runs it); tests that find them missing skip with the reason instead of failing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace kiln::test {

// $KILN_MODEL_CACHE (ctest sets it), else the cache directory chosen when CMake configured.
std::filesystem::path modelCacheDir();

// The path of `file` in the cache.
std::filesystem::path modelPath(const std::string& file);

// Empty when `file` is in the cache, else why not and how to get it.
std::string whyModelMissing(const std::string& file);

}  // namespace kiln::test

// Skips the current test, with the reason, when the fetched model `file` is not there.
#define KILN_REQUIRE_MODEL(file)                                                     \
  do {                                                                               \
    if (const std::string why = ::kiln::test::whyModelMissing(file); !why.empty())   \
      GTEST_SKIP() << "SKIPPED: " << why;                                            \
  } while (0)
