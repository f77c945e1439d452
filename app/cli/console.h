#pragma once
// The terminal side of long commands: warnings and errors on stderr, and a one-line progress bar
// on stderr when it is a terminal (nothing when it is a file or pipe).
#include <kiln/logger.h>

#include <string>

namespace kiln::cli {

// Warnings and errors on stderr; on a terminal each first clears the progress bar's line.
class StderrLogger : public Logger {
 public:
  StderrLogger();
  void log(Severity severity, const std::string& message) override;

 private:
  bool clearLine_;
};

class ProgressBar {
 public:
  ProgressBar();
  ~ProgressBar();  // clears the line
  void draw(double fraction, const std::string& text);
  void clear();

 private:
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace kiln::cli
