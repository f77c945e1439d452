// kiln debug SUBCOMMAND: the accuracy tools (Polygraphy's `debug`): `precision` finds the layers a
// reduced-precision engine must hold back, `advise` ranks the layers by what reducing each costs
// and saves.
#include "debug_commands.h"

#include <vector>

namespace kiln::cli {

Command addDebugCommand(CLI::App& app) {
  CLI::App* debug = app.add_subcommand("debug", "Accuracy tools: find the layers that break a reduced-precision engine");
  debug->require_subcommand(1);
  auto commands = std::make_shared<std::vector<Command>>(
      std::vector<Command>{addDebugPrecisionCommand(*debug), addDebugAdviseCommand(*debug)});
  return {debug, [commands] {
            for (const auto& command : *commands)
              if (command.parser->parsed()) command.run();
          }};
}

}  // namespace kiln::cli
