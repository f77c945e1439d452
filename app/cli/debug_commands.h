#pragma once
// The subcommands of `kiln debug` (debug.cpp adds them under it).
#include "commands.h"

namespace kiln::cli {

Command addDebugPrecisionCommand(CLI::App& debug);
Command addDebugAdviseCommand(CLI::App& debug);

}  // namespace kiln::cli
