#pragma once
// The subcommands of `kiln`. Each adds itself to the parser and returns the action to run when it
// was chosen; actions report failures by throwing kiln::Error (see main.cpp for exit codes).
#include <CLI/CLI.hpp>

#include <functional>

namespace kiln::cli {

struct Command {
  CLI::App* parser = nullptr;
  std::function<void()> run;
};

Command addInspectCommand(CLI::App& app);
Command addRunCommand(CLI::App& app);

}  // namespace kiln::cli
