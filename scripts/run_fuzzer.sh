#!/usr/bin/env bash
# Bounded libFuzzer run of one fuzz target over its seed corpus tests/fuzz/corpus/TARGET; the ctest
# tests fuzz.onnx_importer and fuzz.plan_reader.
# Usage: scripts/run_fuzzer.sh TARGET [SECONDS=60]      TARGET: onnx_importer or plan_reader
#   KILN_FUZZER=PATH   run this fuzzer binary instead of configuring and building the "fuzz" preset
#   KILN_FUZZ_BUILD_BUDGET=SECONDS   time allowed for building the fuzzers (default 1200; a cold
#                                    build takes about 5 minutes on 2 cores)
# Exit codes: 0 no finding, 1 a crash/leak/timeout (the input is kept under build/fuzz/artifacts/),
# 2 bad usage, 77 skipped because clang or libFuzzer is not installed, or because the instrumented
# build did not finish within its budget (ctest shows it as skipped; ccache keeps the progress).
set -euo pipefail

targets=(onnx_importer plan_reader)
target=${1:-}
seconds=${2:-60}
if [[ ! " ${targets[*]} " =~ " $target " ]]; then
  echo "usage: $0 TARGET [SECONDS]   (TARGET: ${targets[*]})" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build/fuzz"
fuzzer=${KILN_FUZZER:-}
skip() { echo "SKIP fuzz.$target: $*"; exit 77; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

if [[ -z "$fuzzer" ]]; then
  command -v clang++ >/dev/null || skip "clang++ not found; install clang to run the fuzzers"
  echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' > "$scratch/probe.cpp"
  clang++ -fsanitize=fuzzer,address "$scratch/probe.cpp" -o "$scratch/probe" 2>/dev/null ||
    skip "clang++ cannot link libFuzzer (-fsanitize=fuzzer); install the clang runtime (libclang-rt-dev)"
  cd "$root"
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=1
  mkdir -p "$build"
  budget=${KILN_FUZZ_BUILD_BUDGET:-1200}
  # ctest may start both fuzz tests at once: one builds every fuzzer (they share the instrumented
  # libraries) while the other waits on the lock, then finds them up to date.
  exec 9>"$build/.build.lock"
  flock -w "$budget" 9 || skip "another fuzz build held the lock for over ${budget}s"
  cmake --preset fuzz >"$scratch/configure.log" 2>&1 ||
    { cat "$scratch/configure.log"; echo "configuring the fuzz preset failed"; exit 1; }
  status=0
  timeout "$budget" cmake --build --preset fuzz --target "${targets[@]/%/_fuzzer}" || status=$?
  flock -u 9
  [[ $status -eq 124 ]] && skip "building the fuzzers took over ${budget}s; ccache keeps the objects built so far, so a later run gets further"
  [[ $status -eq 0 ]] || { echo "building the fuzz preset failed"; exit 1; }
  fuzzer="$build/tests/fuzz/${target}_fuzzer"
fi
[[ -x "$fuzzer" ]] || { echo "fuzzer binary '$fuzzer' does not exist"; exit 1; }

# New inputs go to a scratch corpus, so the seed corpus in the source tree stays as committed.
artifacts="$build/artifacts"
mkdir -p "$artifacts" "$scratch/corpus"
cd "$scratch"
echo "fuzzing $target for ${seconds}s with $fuzzer"
if ! "$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$target-" "$scratch/corpus" "$root/tests/fuzz/corpus/$target"; then
  echo "the fuzzer found a failing input; reproduce with: $fuzzer $artifacts/$target-<crash file>"
  exit 1
fi
