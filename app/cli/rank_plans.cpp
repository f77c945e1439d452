#include "rank_plans.h"

#include <kiln/error.h>

#include <filesystem>
#include <regex>

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

// "model.rank1.plan" -> "model.plan": the path given to --save, when one rank's file was named.
std::string withoutRankSuffix(const std::string& path) {
  const fs::path p(path);
  static const std::regex rankStem(R"((.*)\.rank[0-9]+)");
  std::smatch m;
  const std::string stem = p.stem().string();
  if (!std::regex_match(stem, m, rankStem)) return path;
  return (p.parent_path() / (m[1].str() + p.extension().string())).string();
}

}  // namespace

std::string rankPath(const std::string& path, int rank) {
  const fs::path p(path);
  const std::string suffix = ".rank" + std::to_string(rank);
  if (!p.has_extension()) return path + suffix;
  return (p.parent_path() / (p.stem().string() + suffix + p.extension().string())).string();
}

RankEngines loadRankPlans(const std::string& path, int ranks) {
  const std::string base = withoutRankSuffix(path);
  RankEngines engines;
  std::vector<std::string> names;
  for (int r = 0; r < ranks; ++r) {
    const std::string file = rankPath(base, r);
    if (!fs::exists(file))
      throw Error(ErrorCode::kInvalidArgument, "rank " + std::to_string(r) + "'s plan '" + file +
                                                   "' does not exist; --ranks " + std::to_string(ranks) +
                                                   " runs the plans that `kiln build MODEL --tensor-parallel " +
                                                   std::to_string(ranks) + " --save " + base + "` writes");
    engines.push_back(Runtime().loadFile(file));
    names.push_back(file);
  }
  checkRankEngines(engines, names);
  return engines;
}

}  // namespace kiln::cli
