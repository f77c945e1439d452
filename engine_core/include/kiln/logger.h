#pragma once
// Library code never prints: it reports through a Logger the application supplies.
#include <string>

namespace kiln {

enum class Severity { kError, kWarning, kInfo, kVerbose };
const char* toString(Severity severity);

class Logger {
 public:
  virtual ~Logger() = default;
  virtual void log(Severity severity, const std::string& message) = 0;
};

// Discards everything (the default when no logger is given).
Logger& silentLogger();

}  // namespace kiln
