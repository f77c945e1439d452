// kiln: the command-line front end. Exit codes: 0 success, 1 the model or a file could not be
// loaded, run or written, 2 the command line (or an input it names) is wrong, 130 interrupted
// (Ctrl-C stopped a build; the shells' 128 + SIGINT).
#include "commands.h"

#include <kiln/crash_report.h>
#include <kiln/error.h>
#include <kiln/host_memory.h>

#include <algorithm>
#include <iostream>
#include <new>
#include <vector>

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;

int exitCodeFor(const kiln::Error& error) {
  if (error.code() == kiln::ErrorCode::kCancelled) return kExitInterrupted;
  return error.code() == kiln::ErrorCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  kiln::installCrashReport("kiln");
  kiln::keepFreedHostMemory();
  CLI::App app{"kiln: inspect, run, build, compare, profile and debug ONNX models and Kiln plans", "kiln"};
  app.set_version_flag("--version", "kiln " KILN_VERSION);
  app.require_subcommand(1);
  std::vector<kiln::cli::Command> commands = {kiln::cli::addInspectCommand(app), kiln::cli::addRunCommand(app),
                                             kiln::cli::addBuildCommand(app), kiln::cli::addCompareCommand(app),
                                             kiln::cli::addProfileCommand(app), kiln::cli::addDebugCommand(app)};

  try {
    // CLI11 would only say "a subcommand is required"; name the word it did not know instead.
    bool knownCommand = argc > 1 && std::any_of(commands.begin(), commands.end(), [&](const auto& command) {
      return command.parser->check_name(argv[1]);
    });
    if (argc > 1 && argv[1][0] != '-' && !knownCommand)
      throw kiln::Error(kiln::ErrorCode::kInvalidArgument,
                        std::string("unknown command '") + argv[1] + "'; the commands are inspect, run, build, compare, profile and debug (see kiln --help)");
    app.parse(argc, argv);
    for (const auto& command : commands)
      if (command.parser->parsed()) command.run();
    return 0;
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, the version, or the parse error
    return code == 0 ? 0 : kExitUsage;
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return exitCodeFor(e);
  } catch (const std::bad_alloc&) {
    std::cerr << "kiln: error: out of memory; try smaller input shapes or a machine with more memory\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "kiln: internal error: " << e.what() << " (please report this as a Kiln bug)\n";
    return kExitFailure;
  }
}
