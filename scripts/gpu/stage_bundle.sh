#!/usr/bin/env bash
# Builds Kiln's GPU programs here (CUDA on, sm_90 + PTX) and stages a small bundle for the GPU
# machine as stage/gpu.tar.xz: stripped binaries in bin/ with RPATH $ORIGIN/../lib, the engine, the
# CUDA backend and NCCL communicator modules and the shared libraries the GPU machine lacks (oneDNN,
# OpenBLAS, ONNX, protobuf, ...) in lib/, and in data/ the ONNX test data, the real models and
# speech the tests read there (it has no network and no espeak-ng). The device tool carries stage/
# (git ignores it); scripts/gpu/run_on_gpu.sh unpacks and runs it there.
#
#   scripts/gpu/stage_bundle.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
programs=(kiln kiln_cuda_tests kiln_gpu_tests kiln_models_tests kiln_onnx_node_tests kiln_cuda_plan_tests)
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
[[ -f build/default/build.ninja ]] || cmake --preset default >/dev/null
cmake --build --preset default --target "${programs[@]}" kiln_cuda_backend
modules=(kiln_cuda_backend)
if grep -q 'libkiln_nccl\.so' build/default/build.ninja; then  # where CMake found NCCL
  cmake --build --preset default --target kiln_nccl
  modules+=(kiln_nccl)
fi

stage="$root/stage/gpu"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
for program in "${programs[@]}"; do
  binary=$(find build/default -type f -name "$program" -perm -u+x | head -1)
  [[ -n "$binary" ]] || { echo "stage_bundle: no binary for $program" >&2; exit 1; }
  cp "$binary" "$stage/bin/"
done
for module in "${modules[@]}"; do cp "build/default/engine_core/lib$module.so" "$stage/lib/"; done
# Libraries from Debian that an Ubuntu 24.04 machine with CUDA does not have (or has in another
# version); the C/C++ runtime and CUDA's own libraries are there already.
skip='^(linux-vdso|libc\.|libm\.|libdl\.|librt\.|libpthread\.|ld-linux|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcudnn|libnvrtc|libnccl)'
for binary in "$stage"/bin/* "$stage"/lib/libkiln_*.so; do
  ldd "$binary" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    [[ -e "$stage/lib/$name" ]] || cp -L "$path" "$stage/lib/$name"
  done
done
strip --strip-debug "$stage"/bin/* "$stage"/lib/* 2>/dev/null || true
for binary in "$stage"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$binary"; done
for library in "$stage"/lib/*; do patchelf --set-rpath '$ORIGIN' "$library" 2>/dev/null || true; done

# Test data: ONNX's backend tests, the real models (fetched and cached here), espeak-ng's speech.
cp -r /usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,simple} "$stage/data/"
cp tests/conformance/excluded_tests.txt "$stage/data/"
models="${KILN_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kiln/models/openwakeword-0.1.1}"
bash scripts/fetch_test_models.sh "$models" >/dev/null
mkdir -p "$stage/data/models" "$stage/data/speech"
cp "$models"/*.onnx "$stage/data/models/"
KILN_MODEL_CACHE="$stage/data/models" KILN_SPEECH_CACHE="$stage/data/speech" OMP_WAIT_POLICY=passive \
  build/default/tests/kiln_models_tests --gtest_brief=1 >/dev/null  # fills the speech folder
du -sh "$stage"/bin "$stage"/lib "$stage"/data | sed 's|'"$root"'/||'
tar -C "$root/stage" -cf - gpu | xz -T2 -6 >"$root/stage/gpu.tar.xz"
rm -rf "$stage"
ls -la "$root/stage/gpu.tar.xz" | awk '{print "bundle: stage/gpu.tar.xz,", $5, "bytes"}'
