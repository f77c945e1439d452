// `kiln build` while it tunes: plain progress lines naming each layer's tactics when stderr is no
// terminal, --verbose listing every candidate's time and the choice, and Ctrl-C (SIGINT) mid-tuning
// ending the build with exit code 130, one clear message and no plan or timing cache left behind.
#include "app/cli_fixture.h"
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

using kiln::test::Cli;
using kiln::test::CliResult;
using kiln::test::readFile;

namespace {

class CliBuildProgress : public Cli {};

}  // namespace

TEST_F(CliBuildProgress, PlainLinesNameEachTacticTimedAndVerboseListsTheCandidates) {
  const std::string model = save("stack.onnx", kiln::test::convReluStack(2, 16, 24));
  CliResult r = kiln({"build", model, "--save", path("out/s.plan"), "--verbose"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("kiln: build: tactics\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kiln: timing conv0: cpu.conv."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kiln: timing conv1: cpu.conv."), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);  // no terminal redraws in a file
  EXPECT_NE(r.out.find("tactics (* chosen"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    conv0 (kiln.FusedConv, fp32)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("      * cpu.conv."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ms "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" timed\n"), std::string::npos) << r.out;

  // Level 1 times nothing: the report's statuses say why.
  r = kiln({"build", model, "--save", path("out/l1.plan"), "--opt-level", "1", "--verbose"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err.find("kiln: timing "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("first candidate (optimization level 1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not timed: optimization level 1 takes the first candidate"), std::string::npos) << r.out;
}

TEST_F(CliBuildProgress, InterruptMidTuningStopsTheBuildWithNothingWritten) {
  const std::string model = save("stack.onnx", kiln::test::convReluStack(12, 24, 40));
  const std::string plan = path("out/s.plan"), cache = path("out/timing.cache");
  int errPipe[2];
  ASSERT_EQ(::pipe(errPipe), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(errPipe[1], STDERR_FILENO);
    const int devNull = ::open("/dev/null", O_WRONLY);
    ::dup2(devNull, STDOUT_FILENO);
    ::close(errPipe[0]);
    ::execl(KILN_CLI_PATH, "kiln", "build", model.c_str(), "--save", plan.c_str(), "--timing-cache", cache.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(errPipe[1]);
  FILE* err = ::fdopen(errPipe[0], "r");
  ASSERT_NE(err, nullptr);
  std::string stderrText, line;
  bool signalled = false;
  for (int c; (c = std::fgetc(err)) != EOF;) {
    stderrText += char(c);
    line += char(c);
    if (c != '\n') continue;
    // The first tactic timed: the build is in the middle of tuning its first layer.
    if (!signalled && line.rfind("kiln: timing conv0: ", 0) == 0) {
      ASSERT_EQ(::kill(pid, SIGINT), 0);
      signalled = true;
    }
    line.clear();
  }
  std::fclose(err);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(signalled) << "the build never reported a tactic; stderr: " << stderrText;
  ASSERT_TRUE(WIFEXITED(status)) << "kiln was killed instead of stopping; stderr: " << stderrText;
  EXPECT_EQ(WEXITSTATUS(status), 130) << stderrText;
  EXPECT_NE(stderrText.find("kiln: error: build interrupted during tactics at layer 'conv"), std::string::npos)
      << stderrText;
  EXPECT_NE(stderrText.find("nothing was written (no plan, timing cache or tactic lock)"), std::string::npos)
      << stderrText;
  // It stopped promptly: no layer after the next one was tuned.
  EXPECT_EQ(stderrText.find("kiln: timing conv2: "), std::string::npos) << stderrText;
  EXPECT_EQ(stderrText.find("kiln: build: memory"), std::string::npos) << stderrText;
  EXPECT_TRUE(outFiles().empty()) << "files left after an interrupted build";
}

// A fatal signal (here a SIGSEGV sent mid-tuning) prints the signal and the call stack before the
// process dies of it, so a crash on a machine without a debugger still says where it happened.
// Not installed under AddressSanitizer, whose own handlers report more.
TEST_F(CliBuildProgress, AFatalSignalPrintsTheCallStackAndKillsTheProcess) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps its own fatal-signal handlers";
#endif
  const std::string model = save("stack.onnx", kiln::test::convReluStack(12, 24, 40));
  int errPipe[2];
  ASSERT_EQ(::pipe(errPipe), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(errPipe[1], STDERR_FILENO);
    const int devNull = ::open("/dev/null", O_WRONLY);
    ::dup2(devNull, STDOUT_FILENO);
    ::close(errPipe[0]);
    ::execl(KILN_CLI_PATH, "kiln", "build", model.c_str(), "--save", path("out/s.plan").c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(errPipe[1]);
  FILE* err = ::fdopen(errPipe[0], "r");
  ASSERT_NE(err, nullptr);
  std::string stderrText, line;
  bool signalled = false;
  for (int c; (c = std::fgetc(err)) != EOF;) {
    stderrText += char(c);
    line += char(c);
    if (c != '\n') continue;
    if (!signalled && line.rfind("kiln: timing conv0: ", 0) == 0) {
      ASSERT_EQ(::kill(pid, SIGSEGV), 0);
      signalled = true;
    }
    line.clear();
  }
  std::fclose(err);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(signalled) << "the build never reported a tactic; stderr: " << stderrText;
  ASSERT_TRUE(WIFSIGNALED(status)) << "kiln did not die of the signal; stderr: " << stderrText;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_NE(stderrText.find("kiln: fatal signal SEGV (Segmentation fault)"), std::string::npos) << stderrText;
  EXPECT_NE(stderrText.find("Call stack, innermost first:\n"), std::string::npos) << stderrText;
  // Frames as module(+offset)[address]; the thread the signal reached may be any of the process's.
  EXPECT_NE(stderrText.find(")[0x"), std::string::npos) << "no stack frame: " << stderrText;
  EXPECT_NE(stderrText.find("kiln: please report it"), std::string::npos) << stderrText;
}
