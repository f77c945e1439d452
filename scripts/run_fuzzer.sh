#!/usr/bin/env bash
# Bounded libFuzzer run of the ONNX importer over the seed corpus in tests/fuzz/corpus; the ctest
# test fuzz.onnx_importer. Usage: scripts/run_fuzzer.sh [SECONDS=60]
#   KILN_FUZZER=PATH   run this fuzzer binary instead of configuring and building the "fuzz" preset
#   KILN_FUZZ_BUILD_BUDGET=SECONDS   time allowed for building the fuzz preset (default 1200)
# Exit codes: 0 no finding, 1 a crash/leak/timeout (the input is kept under build/fuzz/artifacts/),
# 77 skipped because clang or libFuzzer is not installed, or because the instrumented build did not
# finish within its budget (ctest shows it as skipped; ccache keeps the progress for the next run).
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
  # A cold clang+ASan build of the engine takes longer than a CI run can spare on 2 cores: bound
  # it, and let ccache carry the compiled objects over to the next run.
  budget=${KILN_FUZZ_BUILD_BUDGET:-1200}
  status=0
  timeout "$budget" cmake --build --preset fuzz --target onnx_importer_fuzzer || status=$?
  [[ $status -eq 124 ]] && skip "building the instrumented fuzz preset took over ${budget}s; ccache keeps the objects built so far, so a later run gets further"
  [[ $status -eq 0 ]] || { echo "building the fuzz preset failed"; exit 1; }
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
