#!/usr/bin/env bash
# Runs on the GPU machine after run_on_gpu.sh unpacked the bundle: compute-sanitizer's memcheck on
# the given gtest filters of the agreement and kernel tests, and racecheck on the kernel tests
# (kernels that share memory between threads). Logs and a summary go to $OUT/sanitize.
#   scripts/gpu/check_kernels.sh AGREEMENT_FILTER KERNEL_FILTER   (KILN_SANITIZER_TIMEOUT: seconds a run, 100)
set -uo pipefail
bin=/tmp/kiln-gpu/gpu/bin
out="${OUT:-/tmp/kiln-gpu/out}/sanitize"
mkdir -p "$out"
cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="${cudnn:+$cudnn:}/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
check() {  # name, tool, binary, filter
  timeout "${KILN_SANITIZER_TIMEOUT:-100}" compute-sanitizer --tool "$2" --error-exitcode 9 "$bin/$3" --gtest_filter="$4" --gtest_brief=1 >"$out/$1.log" 2>&1
  echo "$1 rc=$? $(grep -c '^\[       OK \]' "$out/$1.log") OK, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$1.log" | tr '\n' ' ')"
}
check memcheck_agreement memcheck kiln_gpu_tests "$1" | tee -a "$out/summary.txt"
[[ -n "${KILN_SKIP_KERNEL_MEMCHECK:-}" ]] || check memcheck_kernels memcheck kiln_cuda_tests "$2" | tee -a "$out/summary.txt"
check racecheck_kernels racecheck kiln_cuda_tests "$2" | tee -a "$out/summary.txt"
