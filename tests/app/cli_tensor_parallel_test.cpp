// `kiln build --tensor-parallel N`, `kiln run --ranks N` and `kiln profile --ranks N` end to end on
// a GPT-2-shaped model: one plan a rank (PLAN.rank<r>.plan) whose ranks, run together, save the
// whole plan's outputs; the per-rank timing; and one clear message, a non-zero exit and no files
// for every misuse (ranks missing, of another split, run alone, a size that does not divide).
#include <kiln/compare.h>
#include <kiln/npy.h>

#include "app/cli_fixture.h"
#include "common/transformer_models.h"

#include <gtest/gtest.h>

#include <filesystem>

using kiln::test::Cli;
namespace fs = std::filesystem;

namespace {

class CliTensorParallel : public Cli {
 protected:
  std::string model() { return save("gpt2.onnx", kiln::test::gpt2LikeModel({})); }
  // Builds `ranks` plans named after `plan` (outside out/, which the failure checks keep empty).
  void buildRanks(const std::string& plan, int ranks) {
    auto r = kiln({"build", model(), "--save", plan, "--tensor-parallel", std::to_string(ranks)});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
};

TEST_F(CliTensorParallel, RanksRunTogetherSaveTheWholePlansOutputs) {
  auto built =
      kiln({"build", model(), "--save", path("m.plan"), "--tensor-parallel", "2", "--export-report", path("m.json")});
  ASSERT_EQ(built.exitCode, 0) << built.err;
  EXPECT_TRUE(fs::exists(path("m.rank0.json")) && fs::exists(path("m.rank1.json"))) << "one report a rank";
  EXPECT_NE(built.out.find("built " + path("m.rank0.plan")), std::string::npos) << built.out;
  EXPECT_NE(built.out.find("(tensor-parallel rank 1 of 2)"), std::string::npos) << built.out;
  EXPECT_NE(built.out.find("split the attention block around Softmax '/h.0/attn/Softmax'"), std::string::npos)
      << built.out;
  EXPECT_TRUE(fs::exists(path("m.rank1.plan")));
  EXPECT_FALSE(fs::exists(path("m.plan"))) << "the ranks' plans, not a whole one";
  auto whole = kiln({"build", model(), "--save", path("whole.plan")});
  ASSERT_EQ(whole.exitCode, 0) << whole.err;

  auto split = kiln({"run", path("m.plan"), "--ranks", "2", "--output-dir", path("out/split")});
  ASSERT_EQ(split.exitCode, 0) << split.err;
  auto single = kiln({"run", path("whole.plan"), "--output-dir", path("out/whole")});
  ASSERT_EQ(single.exitCode, 0) << single.err;
  const kiln::HostTensor got = kiln::readNpyFile(path("out/split/y.npy"));
  const kiln::HostTensor want = kiln::readNpyFile(path("out/whole/y.npy"));
  EXPECT_EQ(kiln::checkClose(got, want, 1e-4, 1e-5), "");
  // One rank's file names the same split.
  auto again = kiln({"run", path("m.rank1.plan"), "--ranks", "2"});
  EXPECT_EQ(again.exitCode, 0) << again.err;

  auto inspect = kiln({"inspect", path("m.rank1.plan")});
  ASSERT_EQ(inspect.exitCode, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("tensor parallel: rank 1 of 2"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("kiln.AllReduce"), std::string::npos) << inspect.out;
}

TEST_F(CliTensorParallel, ProfileTimesEveryRank) {
  buildRanks(path("m.plan"), 2);
  auto r = kiln({"profile", path("m.plan"), "--ranks", "2", "--iterations", "3", "--duration", "0", "--warmup", "0"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const std::string& fragment : {"2 tensor-parallel ranks", "timed 3 steps", "latency:", "rank 0:", "rank 1:"})
    EXPECT_NE(r.out.find(fragment), std::string::npos) << fragment << " not in: " << r.out;
}

TEST_F(CliTensorParallel, RefusesRanksThatAreMissingOfAnotherSplitOrAlone) {
  buildRanks(path("m.plan"), 2);
  expectFailure({"run", path("m.plan"), "--ranks", "3", "--output-dir", outDir()}, 2,
                {"rank 2's plan '" + path("m.rank2.plan") + "' does not exist",
                 "kiln build MODEL --tensor-parallel 3 --save " + path("m.plan")});
  buildRanks(path("q.plan"), 4);
  expectFailure({"run", path("q.plan"), "--ranks", "2", "--output-dir", outDir()}, 2,
                {"'" + path("q.rank0.plan") + "' is rank 0 of a 4-rank split, but 2 ranks were asked for"});
  expectFailure({"run", path("m.rank0.plan"), "--output-dir", outDir()}, 2,
                {"is rank 0 of a 2-rank tensor-parallel split; run every rank with --ranks 2"});
  expectFailure({"profile", path("m.rank1.plan")}, 2, {"run every rank with --ranks 2"});
  expectFailure({"run", model(), "--ranks", "2", "--output-dir", outDir()}, 2, {"is not a plan"});
}

TEST_F(CliTensorParallel, RefusesASizeThatDoesNotDivideTheHeadsAndWritesNothing) {
  expectFailure({"build", model(), "--save", path("out/bad.plan"), "--tensor-parallel", "3"}, 2,
                {"the attention block around Softmax '/h.0/attn/Softmax' has 4 heads, which 3 ranks do not divide"});
  expectFailure({"build", model(), "--save", path("out/bad.plan"), "--tensor-parallel", "0"}, 2,
                {"--tensor-parallel must be 1 or more"});
}

}  // namespace
