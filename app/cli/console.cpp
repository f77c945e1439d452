#include "console.h"

#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <iostream>

namespace kiln::cli {

StderrLogger::StderrLogger() : clearLine_(::isatty(STDERR_FILENO)) {}

void StderrLogger::log(Severity severity, const std::string& message) {
  if (severity == Severity::kWarning || severity == Severity::kError)
    std::cerr << (clearLine_ ? "\r\033[K" : "") << "kiln: " << toString(severity) << ": " << message << "\n";
}

ProgressBar::ProgressBar() : enabled_(::isatty(STDERR_FILENO)) {}

ProgressBar::~ProgressBar() { clear(); }

void ProgressBar::draw(double fraction, const std::string& text) {
  if (!enabled_) return;
  const int width = 30, filled = std::clamp(int(fraction * width), 0, width);
  std::cerr << "\r\033[K[" << std::string(size_t(filled), '#') << std::string(size_t(width - filled), ' ') << "] "
            << std::setw(3) << int(fraction * 100) << "% " << text << std::flush;
  drawn_ = true;
}

void ProgressBar::clear() {
  if (enabled_ && drawn_) std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
}

}  // namespace kiln::cli
