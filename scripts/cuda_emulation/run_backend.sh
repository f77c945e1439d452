#!/bin/bash
# Runs tests/gpu's agreement tests against the CUDA backend with its kernels run by the host
# emulator: bash scripts/cuda_emulation/run_backend.sh [gtest filter]. Builds the backend's files
# (without the cuBLASLt/cuDNN families: matmul, conv, graph and 1x1 GEMM conv, recurrent, attention's
# two-product step; stubs register nothing for the first three and only the flash tactics for
# attention) and the emulated kernels into build/cuda-emulation/backend/libkiln_cuda_backend.so,
# linked against build/default's libkiln.so and bound to its own emulated CUDA runtime (-Bsymbolic), and
# runs build/default's kiln_gpu_tests with KILN_BACKEND_DIR pointing there. Needs
#   cmake --build --preset default --target kiln_core kiln_gpu_tests
# Slow (a fiber per GPU thread): keep the filter to the tests you need. Without one, every agreement
# test but the library families' runs; a filter given runs as given (AttentionAgreement.
# FlashTacticsForcedAgree: the flash tactics forced, its fp32 part failing here by design; the
# tests that force kiln.Pointwise's nvrtc.pointwise tactic fail here too: no cubin runs on the host,
# so the emulated backend lists that tactic as unavailable).
set -euo pipefail
source "$(dirname "$0")/common.sh"
build="$root/build/default"
# The backend's include paths and definitions, as the real build compiles it.
backend_flags=$(python3 - "$build/compile_commands.json" <<'PY'
import json, shlex, sys
for entry in json.load(open(sys.argv[1])):
    if entry["file"].endswith("backends/cuda/ops/cuda_pool.cpp"):
        args = shlex.split(entry["command"])
        keep, take = [], False
        for a in args:
            if take: keep.append(a); take = False
            elif a in ("-isystem", "-I", "-D"): keep.append(a); take = True
            elif a.startswith(("-I", "-D")): keep.append(a)
        print(" ".join(shlex.quote(k) for k in keep))
        break
PY
)
objects=("${kernel_objects[@]}")
for src in "$root"/engine_core/src/backends/cuda/*.cpp "$root"/engine_core/src/backends/cuda/ops/*.cpp; do
  case "$(basename "$src")" in
    attention_plan.cpp|sdpa_plan.cpp|quantized_gemm_plan.cpp|conv_plan.cpp) ;;  # planning the steps built here use
    cuda_graph_conv.cpp|cuda_gemm_conv.cpp|cuda_matmul.cpp|cuda_conv.cpp|cuda_recurrent.cpp|cuda_attention.cpp|*_plan.cpp) continue ;;
  esac
  object=$(eval compile "$src" $backend_flags)
  objects+=("$object")
done
object=$(eval compile "$here/library_family_stubs.cpp" $backend_flags -I"$root/engine_core/src")
objects+=("$object")
mkdir -p "$out/backend"
g++ -shared -o "$out/backend/libkiln_cuda_backend.so" "${objects[@]}" -L"$build/engine_core" -lkiln \
  -Wl,-rpath,"$build/engine_core" -Wl,-Bsymbolic -Wl,--no-undefined -lpthread -L/usr/local/cuda/lib64 -lcublasLt -lcudnn -lnvrtc
KILN_BACKEND_DIR="$out/backend" "$build/tests/kiln_gpu_tests" \
  --gtest_filter="${1:-*Agreement*-MatMul*:FusedMatMul*:Gemm*:Conv*:ConvTranspose*:FusedConv*:GraphConv*:Recurrent*:Attention*}"
