#pragma once
// The one exception type of the Kiln API. Messages name the thing (node, op, input, file) and
// say what to do about it.
#include <stdexcept>
#include <string>

namespace kiln {

enum class ErrorCode {
  kInvalidArgument,   // the caller passed something wrong (shape, dtype, option)
  kInvalidModel,      // the model file or graph is malformed
  kUnsupported,       // valid, but Kiln cannot do it (op, attribute, dtype)
  kIoError,           // a file could not be read or written
  kRuntimeError,      // execution failed
  kInternal,          // a Kiln bug
  kCancelled,         // the caller asked to stop
};

const char* toString(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace kiln
