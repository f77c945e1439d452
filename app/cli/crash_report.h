#pragma once
// A crash in kiln (a fatal signal: an abort from the C library's heap checks, a segmentation
// fault) prints the signal and the call stack to stderr before the process dies as it would have,
// so a report names where it happened even on a machine without a debugger. Frames in kiln's
// libraries print as library(+offset): `addr2line -f -C -e <library> <offset>` names them.
namespace kiln::cli {

void installCrashReport();

}  // namespace kiln::cli
