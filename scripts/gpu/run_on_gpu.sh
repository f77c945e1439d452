#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the bundle that stage_bundle.sh made
# (stage/gpu.tar.xz), in one go: the CUDA kernel tests, the backend agreement tests, the ONNX
# node tests through the CUDA backend (every layer on the GPU, and with CPU fallback), the real
# models on CUDA, then compute-sanitizer's memcheck and racecheck. Logs go to $OUT (or
# /tmp/kiln-gpu/out); a short table comes last.
#
#   scripts/gpu/run_on_gpu.sh [--quick] [--no-tests] [--no-conformance] [--gtest_filter=...]
#                             [--benchmark=MODELS[:PRECISIONS[:BATCHES[:MODES]]]]
#     --quick: no sanitizers; --no-tests: only the benchmark; --no-conformance: no ONNX test suites;
#     --benchmark: benchmark_gpu.py afterwards (--opt-level=N: its builds' level, default 3;
#     --jobs=N: pairs prepared at once; --keep-timing-caches: warm builds from an earlier run's caches)
#     (e.g. --benchmark=resnet50,bert_base_s128:fp16,tf32:1,large; GPT-2 INT4 weight-only at batch 1
#     against its fp16 row: --benchmark=gpt2_s128:fp16,int4:1; precisions fp16,tf32,int8,fp8,int4)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p /tmp/kiln-gpu
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$root/stage/gpu.tar.xz" /tmp/kiln-gpu || exit 1
bundle=/tmp/kiln-gpu/gpu
bin="$bundle/bin"
data="$bundle/data"
out="${OUT:-/tmp/kiln-gpu/out}"
mkdir -p "$out"
quick=0 tests=1 conformance_suites=1 benchmark="" bench_level=3 bench_jobs=1 bench_caches=""
filter="*"
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-tests) tests=0 ;;
    --no-conformance) conformance_suites=0 ;;
    --benchmark=*) benchmark="${arg#--benchmark=}" ;;
    --opt-level=*) bench_level="${arg#--opt-level=}" ;;
    --jobs=*) bench_jobs="${arg#--jobs=}" ;;
    --keep-timing-caches) bench_caches="--keep-timing-caches" ;;
    --gtest_filter=*) filter="${arg#--gtest_filter=}" ;;
  esac
done
# cuDNN 9.19 (matching the headers Kiln is built with) comes with PyTorch's environment there;
# the system's 9.14 has a known attention bug. cuBLASLt and NVRTC come with the toolkit.
cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="${cudnn:+$cudnn:}/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 OMP_WAIT_POLICY=passive  # never NVLink multicast on these machines
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"

declare -A result
order=()
run() {  # name, command...: the log goes to $out/name.log, a summary into the table
  local name="$1"; shift
  local start=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  order+=("$name")
  result[$name]="rc=$rc $((SECONDS - start))s $(grep -E '^\[  (PASSED|FAILED)  \] [0-9]|^[0-9]+ passed|ERROR SUMMARY' "$out/$name.log" | tr '\n' ' ' | cut -c1-150)"
  return $rc
}
gtests() { "$@" --gtest_filter="$filter" --gtest_brief=1; }

if ((tests)); then
run kernels gtests "$bin/kiln_cuda_tests"
run plans gtests "$bin/kiln_cuda_plan_tests"
run agreement gtests "$bin/kiln_gpu_tests"
conformance=("$bin/kiln_onnx_node_tests" --excluded "$data/excluded_tests.txt" --batch 40 --jobs 6 --min-pass-rate 0)
if ((conformance_suites)); then
run node_cpu "${conformance[@]}" --engine --node-dir "$data/node"
run node_cuda "${conformance[@]}" --backend cuda --node-dir "$data/node"
run node_cuda_strict "${conformance[@]}" --backend cuda --strict-device --node-dir "$data/node"
for suite in pytorch-converted pytorch-operator simple; do
  run "${suite}_cuda" "${conformance[@]}" --backend cuda --node-dir "$data/$suite"
done
fi
KILN_TEST_BACKEND=cuda KILN_MODEL_CACHE="$data/models" KILN_SPEECH_CACHE="$data/speech" \
  run models_cuda gtests "$bin/kiln_models_tests"
# The CLI on CUDA plans of a real model: build (fp32 without TF32, fp16), run, profile as trtexec
# does (CUDA graph, two streams), and compare with the ONNX reference layer by layer.
cli_on_cuda() {
  local model="$data/models/embedding_model.onnx" work=/tmp/kiln-gpu/cli shape="input_1:8x76x32x1"
  mkdir -p "$work"
  "$bin/kiln" build "$model" --backend cuda --no-tf32 --strict-device --profile "input_1:1x76x32x1/8x76x32x1/32x76x32x1" \
    --export-report "$out/embedding_fp32_report.json" --save "$work/fp32.plan" &&
    "$bin/kiln" build "$model" --backend cuda --fp16 --strict-device --profile "input_1:1x76x32x1/8x76x32x1/32x76x32x1" \
      --save "$work/fp16.plan" &&
    "$bin/kiln" inspect "$work/fp16.plan" &&
    "$bin/kiln" run "$work/fp32.plan" --shapes "$shape" --output-dir "$work/out" &&
    "$bin/kiln" profile "$work/fp16.plan" --shapes "$shape" --cuda-graph --export-profile "$out/embedding_fp16_profile.json" &&
    "$bin/kiln" profile "$work/fp16.plan" --shapes "$shape" --streams 2 --layer-runs 0 &&
    "$bin/kiln" compare "$model" "$work/fp32.plan" --shapes "$shape" --per-layer &&
    "$bin/kiln" compare "$model" "$work/fp16.plan" --shapes "$shape" --atol 0.1 --rtol 0.05 &&
    # INT8 on the GPU end to end: calibrated on mel-like random windows, built, inspected, run.
    python3 -c "import numpy as np, sys; np.save(sys.argv[1], (np.random.default_rng(0).standard_normal((8, 76, 32, 1)) * 2 + 7).astype(np.float32))" "$work/calibration.npy" &&
    "$bin/kiln" build "$model" --backend cuda --fp16 --int8 --calib-data "$work/calibration.npy" --calibrator minmax \
      --profile "input_1:1x76x32x1/8x76x32x1/8x76x32x1" --save "$work/int8.plan" &&
    "$bin/kiln" inspect "$work/int8.plan" &&
    "$bin/kiln" run "$work/int8.plan" --shapes "$shape" --output-dir "$work/int8_out"
}
run cli_cuda cli_on_cuda
if ((!quick)) && command -v compute-sanitizer >/dev/null; then
  run memcheck_kernels timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/kiln_cuda_tests" \
    --gtest_filter="$filter" --gtest_brief=1
  run memcheck_agreement timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/kiln_gpu_tests" \
    --gtest_filter="$filter" --gtest_brief=1
  # racecheck is slow: the kernels that share memory between threads, one family a run for at most
  # 60 s each (hazards are reported as found, so a cut-off run still checked the tests it finished;
  # the table counts them).
  for races in "CudaSoftmax*" "CudaNorm*" "CudaReduce*:CudaLoss*" "Recurrent*" \
               "CudaUnique*:CudaNonMaxSuppression*:CudaNonZero*:CudaCompress*:CudaDynamicQuantizeLinear*"; do
    [[ "$filter" != "*" ]] && races="$filter"
    run "racecheck_${races%%[*:.]*}" timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 \
      "$bin/kiln_cuda_tests" --gtest_filter="$races"
    result[racecheck_${races%%[*:.]*}]+=" $(grep -c '^\[       OK \]' "$out/racecheck_${races%%[*:.]*}.log") tests OK"
    [[ "$filter" != "*" ]] && break
  done
fi
fi
if [[ -n "$benchmark" ]]; then
  IFS=: read -r bench_models bench_precisions bench_batches bench_modes <<<"$benchmark"
  run benchmark python3 "$root/scripts/gpu/benchmark_gpu.py" --kiln "$bin/kiln" --out "$out/benchmark" \
    --models "$bench_models" ${bench_precisions:+--precisions "$bench_precisions"} \
    ${bench_batches:+--batches "$bench_batches"} ${bench_modes:+--modes "$bench_modes"} --opt-level "$bench_level" \
    --jobs "$bench_jobs" $bench_caches
  sed -n '/^## Summary/,$p' "$out/benchmark.log"
fi
grep -h -E '^\[  FAILED  \] [A-Z]' "$out"/kernels.log "$out"/agreement.log "$out"/models_cuda.log 2>/dev/null | sort -u | head -30
grep -h -E "^FAIL " "$out"/node_cuda.log 2>/dev/null | head -30
# Few files come back from the GPU machine: every log in one archive, the table and summaries beside it.
tar -C "$out" -czf "$out/logs.tgz" $(cd "$out" && ls *.log benchmark/*.log 2>/dev/null) &&
  (cd "$out" && rm -f *.log benchmark/*.log)
echo
printf '%-20s %s\n' step result
for name in "${order[@]}"; do printf '%-20s %s\n' "$name" "${result[$name]}"; done
