#!/usr/bin/env bash
# Kiln's CPU engine before and after a change, same machine, same run: a baseline build of
# kiln_cpu_benchmark (made from an older commit, e.g. in a git worktree) against this tree's.
#
#   scripts/cpu_benchmark_ab.sh BASELINE_BENCHMARK [--pairs N] [--runs N] [--instructions] [MODEL...]
#
# Wall time: N pairs of rounds (baseline, then current, alternating so a change in machine load hits
# both alike), each round N runs after warm-up; per model the median over pairs of each side's round
# median, and current / baseline. --instructions: instead, instructions executed inside
# ExecutionContext::run counted by callgrind (one thread; repeatable whatever else the machine is
# doing, which a shared machine needs), per inference. Models as run_cpu_benchmark.sh makes them
# (default resnet18 bert_tiny owkw_embedding owkw_embedding_b32 owkw_melspec).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
baseline="${1:?usage: cpu_benchmark_ab.sh BASELINE_BENCHMARK [--pairs N] [--runs N] [--instructions] [MODEL...]}"
shift
pairs=5 runs=20 instructions=0 models=()
while (($#)); do
  case "$1" in
    --pairs) pairs="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --instructions) instructions=1; shift ;;
    *) models+=("$1"); shift ;;
  esac
done
((${#models[@]})) || models=(resnet18 bert_tiny owkw_embedding owkw_embedding_b32 owkw_melspec)
current="$root/build/default/tests/benchmarks/kiln_cpu_benchmark"
models_dir="$root/build/default/benchmarks"
[[ -x "$current" && -x "$baseline" ]] || { echo "cpu_benchmark_ab: build both benchmarks first" >&2; exit 2; }
[[ -f "$models_dir/${models[0]}.onnx" ]] || { echo "cpu_benchmark_ab: run scripts/run_cpu_benchmark.sh once to make the models" >&2; exit 2; }
bench_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Both sides run copies with every input's dims pinned to the benchmark's input shapes: a baseline
# from before optimisation profiles were read from MODEL.inputs.json cannot build dynamic ones.
/usr/bin/python3 - "$models_dir" "$work/models" "${models[@]}" <<'PY'
import json, os, shutil, sys
import onnx
src, dst, names = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(dst, exist_ok=True)
for name in names:
    listing = json.load(open(os.path.join(src, name + ".inputs.json")))
    model = onnx.load(os.path.join(src, name + ".onnx"))
    dims = {i["name"]: i["dims"] for i in listing["inputs"]}
    for value in model.graph.input:
        for d, size in zip(value.type.tensor_type.shape.dim, dims.get(value.name, [])):
            d.ClearField("dim_param")
            d.dim_value = size
    onnx.save(model, os.path.join(dst, name + ".onnx"))
    shutil.copy(os.path.join(src, name + ".inputs.json"), dst)
    for i in listing["inputs"]:
        shutil.copy(os.path.join(src, i["file"]), dst)
PY
models_dir="$work/models"

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

if ((instructions)); then
  runs=3
  printf '| model | baseline instructions / run | current instructions / run | current / baseline |\n|---|---:|---:|---:|\n'
  for model in "${models[@]}"; do
    declare -A ir=()
    for side in baseline current; do
      binary=$baseline; [[ $side == current ]] && binary=$current
      # Counted from the first timed run on: warm-up 1 run (untimed but counted: +1).
      "${bench_env[@]}" OPENBLAS_NUM_THREADS=1 KILN_NUM_THREADS=1 valgrind --tool=callgrind --smc-check=all \
        --collect-atstart=no --toggle-collect='kiln::ExecutionContext::run*' --callgrind-out-file="$work/$side.out" \
        "$binary" --dir "$models_dir" --rounds 1 --runs "$runs" --warmup 1 --threads 1 --reference-runs 0 "$model" \
        >"$work/$side.log" 2>&1 || { echo "cpu_benchmark_ab: $side failed on $model:"; tail -5 "$work/$side.log"; exit 1; }
      total=$(grep -E '^(summary|totals):' "$work/$side.out" | head -1 | awk '{print $2}')
      ir[$side]=$((total / (runs + 1)))
    done
    awk -v m="$model" -v b="${ir[baseline]}" -v c="${ir[current]}" \
      'BEGIN {printf "| %s | %d | %d | %.3f |\n", m, b, c, c / b}'
  done
  exit 0
fi

for ((pair = 1; pair <= pairs; ++pair)); do
  for side in baseline current; do
    binary=$baseline; [[ $side == current ]] && binary=$current
    "${bench_env[@]}" OPENBLAS_NUM_THREADS=2 KILN_NUM_THREADS=2 "$binary" --dir "$models_dir" --rounds 1 \
      --runs "$runs" --warmup 5 --threads 2 --reference-runs 0 "${models[@]}" >"$work/$side.$pair.log" 2>&1
    # Table rows: | model | Kiln ms | ...
    awk -F'|' -v s="$side" 'NF > 3 && $3 ~ /[0-9]/ {gsub(/ /, "", $2); gsub(/ /, "", $3); print $2, s, $3}' \
      "$work/$side.$pair.log" >>"$work/times"
  done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) on $(nproc) cores"
printf '| model | baseline ms | current ms | current / baseline |\n|---|---:|---:|---:|\n'
for model in "${models[@]}"; do
  b=$(awk -v m="$model" '$1 == m && $2 == "baseline" {print $3}' "$work/times" | median)
  c=$(awk -v m="$model" '$1 == m && $2 == "current" {print $3}' "$work/times" | median)
  awk -v m="$model" -v b="$b" -v c="$c" 'BEGIN {printf "| %s | %.2f | %.2f | %.3f |\n", m, b, c, c / b}'
done
