// `kiln build` while it tunes: plain progress lines naming each layer's tactics when stderr is no
// terminal, --verbose listing every candidate's time and the choice, and Ctrl-C (SIGINT) mid-tuning
// ending the build with exit code 130, one clear message and no plan or timing cache left behind;
// a fatal signal printing the call stack (both through runAndSignal).
#include "app/cli_fixture.h"
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

using kiln::test::Cli;
using kiln::test::CliResult;
using kiln::test::readFile;

namespace {

class CliBuildProgress : public Cli {};

// What a kiln run sent `signal` gave back: its stderr and wait status, and whether the signal went.
struct SignalledRun {
  std::string stderrText;
  int status = 0;
  bool signalled = false;
};

// Runs kiln with `args` (stdout dropped) and sends it `signal` when its stderr first has a line
// starting with `trigger`; returns once it has ended.
SignalledRun runAndSignal(const std::vector<std::string>& args, const std::string& trigger, int signal) {
  SignalledRun run;
  int errPipe[2];
  if (::pipe(errPipe) != 0) return run;
  const pid_t pid = ::fork();
  if (pid < 0) {  // no child: nothing to signal (kill(-1, ...) would reach every process)
    ::close(errPipe[0]);
    ::close(errPipe[1]);
    return run;
  }
  if (pid == 0) {
    ::dup2(errPipe[1], STDERR_FILENO);
    const int devNull = ::open("/dev/null", O_WRONLY);
    ::dup2(devNull, STDOUT_FILENO);
    ::close(errPipe[0]);
    std::vector<char*> argv{const_cast<char*>("kiln")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(KILN_CLI_PATH, argv.data());
    ::_exit(127);
  }
  ::close(errPipe[1]);
  FILE* err = ::fdopen(errPipe[0], "r");
  std::string line;
  for (int c; err && (c = std::fgetc(err)) != EOF;) {
    run.stderrText += char(c);
    line += char(c);
    if (c != '\n') continue;
    if (!run.signalled && line.rfind(trigger, 0) == 0) run.signalled = ::kill(pid, signal) == 0;
    line.clear();
  }
  if (err) std::fclose(err);
  ::waitpid(pid, &run.status, 0);
  return run;
}

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
  // Signalled at the first tactic timed: the build is in the middle of tuning its first layer.
  const auto [stderrText, status, signalled] =
      runAndSignal({"build", model, "--save", plan, "--timing-cache", cache}, "kiln: timing conv0: ", SIGINT);
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
  const auto [stderrText, status, signalled] =
      runAndSignal({"build", model, "--save", path("out/s.plan")}, "kiln: timing conv0: ", SIGSEGV);
  ASSERT_TRUE(signalled) << "the build never reported a tactic; stderr: " << stderrText;
  ASSERT_TRUE(WIFSIGNALED(status)) << "kiln did not die of the signal; stderr: " << stderrText;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_NE(stderrText.find("kiln: fatal signal SEGV (Segmentation fault)"), std::string::npos) << stderrText;
  EXPECT_NE(stderrText.find("Call stack, innermost first:\n"), std::string::npos) << stderrText;
  // Frames as module(+offset)[address]; the thread the signal reached may be any of the process's.
  EXPECT_NE(stderrText.find(")[0x"), std::string::npos) << "no stack frame: " << stderrText;
  EXPECT_NE(stderrText.find("kiln: please report it"), std::string::npos) << stderrText;
}
