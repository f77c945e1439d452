#!/bin/bash
# Builds tests/cuda's GPU tests with the kernels run by the host emulator (cuda_emulation.h) and
# runs them: bash scripts/cuda_emulation/run.sh [gtest filter]. Needs build/default's CPU kernels
# (cmake --build --preset default --target kiln_cpu_kernels) and the CUDA toolkit's headers.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/scripts/cuda_emulation"
out="$root/build/cuda-emulation"
mkdir -p "$out/tree" "$out/obj"
rm -rf "$out/tree/kernels" && cp -r "$root/kernels" "$out/tree/"
for f in $(find "$out/tree/kernels/cuda" -name '*.cu' -o -name '*.cuh'); do python3 "$here/rewrite_launches.py" "$f" "$f" 2>/dev/null; done
flags="-std=c++20 -O1 -g -w -include $here/cuda_emulation.h -I$out/tree -I$root/tests -I$root -isystem /usr/local/cuda/include"
objects=()
for src in $(find "$out/tree/kernels/cuda" -name '*.cu' -o -name '*.cpp') "$root"/tests/cuda/*_test.cpp "$here/host_runtime.cpp"; do
  case "$src" in *_host_test.cpp|*tensor_geometry_test.cpp) continue ;; esac
  object="$out/obj/$(basename "$src").o"
  nice -n 10 g++ $flags -x c++ -c "$src" -o "$object"
  objects+=("$object")
done
g++ "${objects[@]}" "$root/build/default/kernels/libkiln_cpu_kernels.a" "$root/build/default/kernels/libkiln_cpu_kernel_common.a" \
  -lgtest -lgtest_main -lopenblas -ldnnl -fopenmp -lpthread -o "$out/kiln_cuda_tests_emulated"
"$out/kiln_cuda_tests_emulated" --gtest_filter="${1:-*}"
