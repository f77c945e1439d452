#pragma once
// The subcommands of `kiln`. Each adds itself to the parser and returns the action to run when it
// was chosen; actions report failures by throwing kiln::Error (see main.cpp for exit codes).
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace kiln::cli {

struct Command {
  CLI::App* parser = nullptr;
  std::function<void()> run;
};

Command addInspectCommand(CLI::App& app);
Command addRunCommand(CLI::App& app);
Command addBuildCommand(CLI::App& app);
Command addCompareCommand(CLI::App& app);
Command addProfileCommand(CLI::App& app);
Command addDebugCommand(CLI::App& app);

// `kiln inspect PLAN`: the engine's layers (type, precision, tactic, shapes, fused ONNX nodes).
void inspectPlan(const std::string& path, bool json);

}  // namespace kiln::cli
