#include <kiln/crash_report.h>

#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

namespace kiln {
namespace {

constexpr int kFatalSignals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
const char* programName = "kiln";

void writeText(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
  (void)ignored;
}

// Only async-signal-safe calls here: write, backtrace (its unwinder loaded at install),
// backtrace_symbols_fd, raise.
void reportAndDie(int signal) {
  writeText(programName);
  writeText(": fatal signal ");
  writeText(sigabbrev_np(signal) ? sigabbrev_np(signal) : "?");
  writeText(" (");
  writeText(sigdescr_np(signal) ? sigdescr_np(signal) : "unknown");
  writeText("); this is a bug in Kiln or a library it uses. Call stack, innermost first:\n");
  void* frames[64];
  const int count = backtrace(frames, 64);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  writeText(programName);
  writeText(": please report it with the command line and the stack above\n");
  raise(signal);  // SA_RESETHAND restored the default action: the process dies of the same signal
}

}  // namespace

void installCrashReport(const char* program) {
#if defined(__SANITIZE_ADDRESS__)
  (void)program;
  return;  // AddressSanitizer's own handlers report more (the access, its shadow memory)
#endif
  if (program) programName = program;
  void* warm[1];
  backtrace(warm, 1);  // the first call loads the unwinder, which is not safe inside a handler
  struct sigaction action {};
  action.sa_handler = reportAndDie;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (int signal : kFatalSignals) sigaction(signal, &action, nullptr);
}

}  // namespace kiln
