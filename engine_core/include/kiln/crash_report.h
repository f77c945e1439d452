#pragma once
// Process-wide, for programs (the kiln CLI, Kiln Studio) rather than for libraries that embed
// Kiln: a fatal signal (an abort from the C library's heap checks, a segmentation fault) prints the
// program, the signal and the call stack to stderr before the process dies as it would have, so a
// report names where it happened even on a machine without a debugger. Frames in Kiln's libraries
// print as library(+offset): `addr2line -f -C -e <library> <offset>` names them. Not installed
// under AddressSanitizer, whose own handlers say more.
namespace kiln {

// `program` names the process in the report ("kiln", "kiln-studio"); it must outlive the process.
void installCrashReport(const char* program);

}  // namespace kiln
