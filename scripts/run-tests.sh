#!/usr/bin/env bash
# Set up, build, and run Kiln's whole test suite (unit, conformance, GUI, fuzzing), then the tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer. GPU tests skip with a printed reason
# on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
export QT_QPA_PLATFORM=offscreen
ctest --preset default --output-on-failure -j 2
# The sanitizer run: its build is a second full build (other flags, no ccache hits from the
# first). With a warm ccache the run costs about 5 minutes (build 30 s, tests 4-6 min on 2 cores);
# when the build needs longer than the budget (a cold ccache, a change to a header most files
# include) it is a skip, ccache keeps the objects built, and a later run gets further.
status=0
KILN_SANITIZER_BUILD_BUDGET=${KILN_SANITIZER_BUILD_BUDGET:-600} bash scripts/run_sanitizers.sh || status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 77 ]
