#pragma once
// `kiln build`'s progress on stderr and its Ctrl-C: the builder's BuildObserver for the CLI.
#include <kiln/builder.h>

#include <csignal>
#include <set>
#include <string>

namespace kiln::cli {

// While it lives, the first SIGINT asks the build to stop at its next progress point (the builder
// then fails with kCancelled before anything is written); a second one ends the program at once.
class InterruptHandler {
 public:
  InterruptHandler();
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;
  static bool interrupted();

 private:
  struct sigaction previous_ {};
};

// On a terminal one updating line (bar, phase, layer, the tactic being timed, cut to the terminal's
// width); otherwise a plain line for each phase and for each tactic a layer times. Cancels the
// build once InterruptHandler has seen a SIGINT.
class BuildProgressPrinter : public BuildObserver {
 public:
  BuildProgressPrinter();
  ~BuildProgressPrinter() override;
  void progress(const BuildProgress& p) override;
  bool cancelled() override { return InterruptHandler::interrupted(); }
  const BuildProgress& last() const { return last_; }  // the phase and layer it stopped in

 private:
  void drawLine(const BuildProgress& p);

  bool terminal_;
  bool drawn_ = false;
  std::string phase_, layer_;
  std::set<std::string> tactics_;  // printed for the current layer
  BuildProgress last_;
};

}  // namespace kiln::cli
