#!/bin/bash
# Builds tests/cuda's GPU tests with the kernels run by the host emulator (cuda_emulation.h) and
# runs them: bash scripts/cuda_emulation/run.sh [gtest filter]. Needs build/default's CPU kernels
# (cmake --build --preset default --target kiln_cpu_kernels) and the CUDA toolkit's headers.
set -euo pipefail
source "$(dirname "$0")/common.sh"
objects=("${kernel_objects[@]}")
for src in "$root"/tests/cuda/*_test.cpp; do
  case "$src" in *_host_test.cpp|*tensor_geometry_test.cpp) continue ;; esac
  object=$(compile "$src")
  objects+=("$object")
done
g++ "${objects[@]}" "$root/build/default/kernels/libkiln_cpu_kernels.a" "$root/build/default/kernels/libkiln_cpu_kernel_common.a" \
  -lgtest -lgtest_main -lopenblas -ldnnl -fopenmp -lpthread -o "$out/kiln_cuda_tests_emulated"
"$out/kiln_cuda_tests_emulated" --gtest_filter="${1:-*}"
