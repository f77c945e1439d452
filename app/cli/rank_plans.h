#pragma once
// The plans of a tensor-parallel build: `kiln build MODEL --tensor-parallel N --save PLAN` writes
// rank r's plan to PLAN with ".rank<r>" before its extension (model.plan -> model.rank0.plan,
// model.rank1.plan, ...); `kiln run` and `kiln profile` take the same PLAN with --ranks N.
#include <kiln/multi_rank.h>

#include <string>

namespace kiln::cli {

// Rank r's file for `path` ("model.plan", 1 -> "model.rank1.plan"; "model" -> "model.rank1").
std::string rankPath(const std::string& path, int rank);

// Loads the `ranks` plans of `path` (the path given to --save, or one of its rank files) and checks
// that they are ranks 0..ranks-1 of one split; errors name the file and say what to do.
RankEngines loadRankPlans(const std::string& path, int ranks);

}  // namespace kiln::cli
