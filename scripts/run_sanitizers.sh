#!/usr/bin/env bash
# Builds the engine and its tests with AddressSanitizer + UndefinedBehaviorSanitizer (the "asan"
# preset: GCC, -O1 -g, no CUDA backend, no Qt) and runs the tests under them. Any sanitizer report
# (ASan, LeakSanitizer, UBSan) fails the run, even one from a child process whose test tolerates a
# crash (the conformance runner forks a child per batch and allows 5% failures).
#
# Usage: scripts/run_sanitizers.sh
#   Runs every ctest test but those the asan test preset leaves out: fuzz.* (fuzzing has its own
#   ASan build with clang: scripts/run_fuzzer.sh) and packaging.* (desktop files and the .deb, not engine code): the unit
#   tests, the real-model tests and every conformance suite (ONNX's node tests on the reference
#   executor, through the engine and on the test device; under ASan each takes well under a minute).
#   KILN_SANITIZER_JOBS=N  build jobs (default 2, at nice)
#   KILN_SANITIZER_BUILD_BUDGET=SECONDS  give up building after this long (default: no limit) and
#       exit 77, a skip: ccache keeps what was built, so a later run gets further (CI sets it)
# Writes build/asan/sanitizers.log (configure, build and every test's output) and prints a summary.
# Exit status: 0 clean; 1 a test failed or a sanitizer reported something; 2 bad usage or the build
# failed; 77 skipped (the build did not finish within its budget).
set -euo pipefail

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=build/asan
log=$build/sanitizers.log
mkdir -p "$build"
: >"$log"
start=$(date +%s)

# Objects are cached per compiler flags: the first build of this preset is a full build, later
# ones hit ccache like the default build does.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
budget=()
[ -z "${KILN_SANITIZER_BUILD_BUDGET:-}" ] || budget=(timeout "$KILN_SANITIZER_BUILD_BUDGET")
status=0
{ cmake --preset asan && "${budget[@]}" nice cmake --build --preset asan -j "${KILN_SANITIZER_JOBS:-2}"; } >>"$log" 2>&1 ||
  status=$?
if [ "$status" -eq 124 ] && [ ${#budget[@]} -gt 0 ]; then
  echo "SKIP sanitizers: building the asan preset took over ${KILN_SANITIZER_BUILD_BUDGET}s; ccache keeps the" \
       "objects built so far, so a later run gets further (log: $log)"
  exit 77
elif [ "$status" -ne 0 ]; then
  tail -30 "$log"
  echo "sanitizers: configuring or building the asan preset failed (log: $log)"
  exit 2
fi
built=$(date +%s)

# The options are the test preset's (CMakePresets.json); shown here for reproducing one test by hand.
echo "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1" >>"$log"
status=0
ctest --preset asan -j 2 -V >>"$log" 2>&1 || status=$?
end=$(date +%s)

# ctest's own summary line: "NN% tests passed, F tests failed out of T".
summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1 || true)
total=$(sed -nE 's/.* out of ([0-9]+)$/\1/p' <<<"$summary")
failed=$(sed -nE 's/.*, ([0-9]+) tests? failed.*/\1/p' <<<"$summary")
skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$log" || true)
reports=$(grep -cE 'ERROR: (AddressSanitizer|LeakSanitizer)|: runtime error: ' "$log" || true)
echo "sanitizers (ASan+UBSan):" \
     "${total:-0} tests run, $(( ${total:-0} - ${failed:-0} - skipped )) passed, ${failed:-?} failed," \
     "$skipped skipped; $reports sanitizer reports; build $((built - start)) s, tests $((end - built)) s," \
     "wall $((end - start)) s (log: $log)"
if [ "$reports" -gt 0 ]; then
  grep -E 'ERROR: (AddressSanitizer|LeakSanitizer)|: runtime error: ' "$log" | sort | uniq -c | sort -rn | head -20
fi
grep -E '^ *[0-9]+ - .*\((Failed|Timeout|Subprocess aborted|SEGFAULT|Exception)' "$log" | head -20 || true
[ "$status" -eq 0 ] && [ "$reports" -eq 0 ] && [ -n "$summary" ]
