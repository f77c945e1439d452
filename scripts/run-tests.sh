#!/usr/bin/env bash
# Set up, build, and run Kiln's whole test suite (unit, conformance, GUI, fuzzing). GPU tests
# skip with a printed reason on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
export QT_QPA_PLATFORM=offscreen
ctest --preset default --output-on-failure -j 2
