#include "build_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace kiln::cli {
namespace {

volatile std::sig_atomic_t interruptSeen = 0;

void onInterrupt(int) { interruptSeen = 1; }

}  // namespace

InterruptHandler::InterruptHandler() {
  interruptSeen = 0;
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  action.sa_flags = SA_RESETHAND;  // the second Ctrl-C gets the default action: the program ends
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &previous_);
}

InterruptHandler::~InterruptHandler() { ::sigaction(SIGINT, &previous_, nullptr); }

bool InterruptHandler::interrupted() { return interruptSeen != 0; }

BuildProgressPrinter::BuildProgressPrinter() : terminal_(::isatty(STDERR_FILENO)) {}

BuildProgressPrinter::~BuildProgressPrinter() {
  if (terminal_ && drawn_) std::cerr << "\r\033[K" << std::flush;
}

void BuildProgressPrinter::progress(const BuildProgress& p) {
  last_ = p;
  if (terminal_) return drawLine(p);
  if (p.phase != phase_) std::cerr << "kiln: build: " << p.phase << "\n";
  if (p.phase != phase_ || p.layer != layer_) tactics_.clear();
  phase_ = p.phase;
  layer_ = p.layer;
  if (!p.tactic.empty() && tactics_.insert(p.tactic).second)
    std::cerr << "kiln: timing " << p.layer << ": " << p.tactic << "\n";
}

void BuildProgressPrinter::drawLine(const BuildProgress& p) {
  constexpr int kBarWidth = 20;
  const int filled = std::clamp(int(p.fraction * kBarWidth), 0, kBarWidth);
  std::ostringstream line;
  line << "[" << std::string(size_t(filled), '#') << std::string(size_t(kBarWidth - filled), ' ') << "] "
       << std::setw(3) << int(p.fraction * 100) << "% " << p.phase << (p.layer.empty() ? "" : " " + p.layer)
       << (p.tactic.empty() ? "" : " : " + p.tactic);
  std::string text = line.str();
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 && text.size() >= size.ws_col)
    text.resize(size.ws_col - 1u);  // a wrapped line could not be redrawn in place
  std::cerr << "\r\033[K" << text << std::flush;
  drawn_ = true;
}

}  // namespace kiln::cli
