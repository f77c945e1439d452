#!/usr/bin/env bash
# Installs missing packages, then configures and builds Kiln (ccache keeps rebuilds cheap).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# ccache hits across checkouts in other folders (CI clones elsewhere): hash paths relative to here.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
preset="${KILN_PRESET:-default}"
[ -f "build/$preset/CMakeCache.txt" ] || cmake --preset "$preset"
cmake --build --preset "$preset"
