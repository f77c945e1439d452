#pragma once
// Runs the built `kiln` executable as a subprocess in a per-test temp folder and captures its exit
// code, stdout and stderr; shared by the CLI test files.
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::test {

namespace fs = std::filesystem;

struct CliResult {
  int exitCode = -1;
  std::string out, err;
};

inline std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void writeFile(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

inline std::string shellQuote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln_cli_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "out");
  }
  void TearDown() override { fs::remove_all(dir_); }

  CliResult kiln(const std::vector<std::string>& args) {
    std::string command = shellQuote(KILN_CLI_PATH);
    for (const auto& a : args) command += " " + shellQuote(a);
    command += " >" + shellQuote((dir_ / "stdout.txt").string()) + " 2>" + shellQuote((dir_ / "stderr.txt").string());
    int status = std::system(command.c_str());
    CliResult r;
    r.out = readFile(dir_ / "stdout.txt");
    r.err = readFile(dir_ / "stderr.txt");
    EXPECT_TRUE(WIFEXITED(status)) << "kiln was killed by a signal; stderr: " << r.err;
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r.exitCode == 127) ADD_FAILURE() << "could not start " << KILN_CLI_PATH << ": " << r.err;
    return r;
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string outDir() const { return path("out"); }
  std::string save(const std::string& name, const ModelBuilder& mb) const {
    writeFile(dir_ / name, mb.bytes());
    return path(name);
  }
  std::vector<std::string> outFiles() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_ / "out")) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  // The contract for bad input: the given exit code, one message naming `fragment` on stderr, no
  // output files, nothing on stdout after the failure point that claims success.
  void expectFailure(const std::vector<std::string>& args, int exitCode, const std::vector<std::string>& fragments) {
    CliResult r = kiln(args);
    EXPECT_EQ(r.exitCode, exitCode) << "stderr: " << r.err;
    for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << "'" << f << "' not in: " << r.err;
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    EXPECT_TRUE(outFiles().empty()) << "output files left after a failure";
  }

  fs::path dir_;
};

}  // namespace kiln::test
