#!/usr/bin/env bash
# Bounded libFuzzer run of the ONNX importer over the seed corpus in tests/fuzz/corpus; the ctest
# test fuzz.onnx_importer. Usage: scripts/run_fuzzer.sh [SECONDS=60]
#   KILN_FUZZER=PATH   run this fuzzer binary instead of configuring and building the "fuzz" preset
# Exit codes: 0 no finding, 1 a crash/leak/timeout (the input is kept under build/fuzz/artifacts/),
# 77 skipped because clang or libFuzzer is not installed (ctest shows it as skipped).
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fuzzer=${KILN_FUZZER:-}
skip() { echo "SKIP fuzz.onnx_importer: $*"; exit 77; }

if [[ -z "$fuzzer" ]]; then
  command -v clang++ >/dev/null || skip "clang++ not found; install clang to fuzz the importer"
  probe=$(mktemp -d)
  trap 'rm -rf "$probe"' EXIT
  echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' > "$probe/probe.cpp"
  clang++ -fsanitize=fuzzer,address "$probe/probe.cpp" -o "$probe/probe" 2>/dev/null ||
    skip "clang++ cannot link libFuzzer (-fsanitize=fuzzer); install the clang runtime (libclang-rt-dev)"
  cd "$root"
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=1
  log="$probe/configure.log"
  cmake --preset fuzz >"$log" 2>&1 || { cat "$log"; echo "configuring the fuzz preset failed"; exit 1; }
  cmake --build --preset fuzz --target onnx_importer_fuzzer
  fuzzer="$root/build/fuzz/tests/fuzz/onnx_importer_fuzzer"
fi
[[ -x "$fuzzer" ]] || { echo "fuzzer binary '$fuzzer' does not exist"; exit 1; }

# New inputs go to a scratch corpus, so the seed corpus in the source tree stays as committed.
work=$(mktemp -d)
artifacts="$root/build/fuzz/artifacts"
mkdir -p "$artifacts"
trap 'rm -rf "$work" "${probe:-}"' EXIT
cd "$work"
echo "fuzzing the ONNX importer for ${seconds}s with $fuzzer"
if ! "$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "$root/tests/fuzz/corpus"; then
  echo "the fuzzer found a failing input; reproduce with: $fuzzer $artifacts/<crash file>"
  exit 1
fi
