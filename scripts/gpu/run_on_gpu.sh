#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the bundle that stage_bundle.sh made
# (stage/gpu.tar.xz): the GPU tests, then compute-sanitizer's memcheck and racecheck on them; logs
# and JUnit XML go to $OUT (or /tmp/kiln-gpu/out), and a short table comes last.
#
#   scripts/gpu/run_on_gpu.sh [--quick] [--gtest_filter=...]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p /tmp/kiln-gpu
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$root/stage/gpu.tar.xz" /tmp/kiln-gpu || exit 1
bundle=/tmp/kiln-gpu/gpu
out="${OUT:-/tmp/kiln-gpu/out}"
mkdir -p "$out"
quick=0
filter="*"
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --gtest_filter=*) filter="${arg#--gtest_filter=}" ;;
  esac
done
# cuDNN 9.19 (matching the headers Kiln is built with) comes with PyTorch's environment there;
# the system's 9.14 has a known attention bug.
cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], "lib"))' 2>/dev/null || true)
[[ -n "$cudnn" ]] && export LD_LIBRARY_PATH="$cudnn${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on these machines
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"

declare -A result
run() {  # name, command...
  local name="$1"; shift
  local start=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  result[$name]="rc=$rc $((SECONDS - start))s $(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran|ERROR SUMMARY' "$out/$name.log" | tr '\n' ' ' | cut -c1-160)"
  return $rc
}

tests="$bundle/bin/kiln_cuda_tests"
run cuda_tests "$tests" --gtest_filter="$filter" --gtest_output="xml:$out/cuda_tests.xml"
grep -E '^\[  FAILED  \]' "$out/cuda_tests.log" | head -40
if ((!quick)) && command -v compute-sanitizer >/dev/null; then
  run memcheck timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$tests" --gtest_filter="$filter"
  # racecheck is slow: the kernels that share memory between threads.
  races="CudaSoftmax*:CudaNorm*:CudaReduce*:CudaPool.Global*:CudaLayout.Strided*:CudaLayout.Reformat*:CudaLayout.Transpose*"
  [[ "$filter" != "*" ]] && races="$filter"
  run racecheck timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 "$tests" --gtest_filter="$races"
  grep -E "ERROR|Invalid|hazard" "$out/memcheck.log" "$out/racecheck.log" | head -20
fi
echo
printf '%-12s %s\n' step result
for name in cuda_tests memcheck racecheck; do
  [[ -n "${result[$name]:-}" ]] && printf '%-12s %s\n' "$name" "${result[$name]}"
done
