#!/usr/bin/env bash
# Builds Kiln's GPU programs here (CUDA on, sm_90 + PTX) and stages a small bundle for the GPU
# machine as stage/gpu.tar.xz: stripped binaries in bin/ with RPATH $ORIGIN/../lib and the shared
# libraries the GPU machine lacks (oneDNN, OpenBLAS, ONNX, protobuf, ...) in lib/. The device tool
# carries stage/ (git ignores it); scripts/gpu/run_on_gpu.sh unpacks and runs it there.
#
#   scripts/gpu/stage_bundle.sh [TARGET...]     (default: every GPU test and tool)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
targets=("$@")
((${#targets[@]})) || targets=(kiln_cuda_tests)
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
[[ -f build/default/build.ninja ]] || cmake --preset default >/dev/null
cmake --build --preset default --target "${targets[@]}"

stage="$root/stage/gpu"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"
for target in "${targets[@]}"; do
  binary=$(find build/default -type f -name "$target" -perm -u+x | head -1)
  [[ -n "$binary" ]] || { echo "stage_bundle: no binary for target $target" >&2; exit 1; }
  cp "$binary" "$stage/bin/"
done
# Libraries from Debian that an Ubuntu 24.04 machine with CUDA does not have (or has in another
# version); the C/C++ runtime and CUDA's own libraries are there already.
skip='^(linux-vdso|libc\.|libm\.|libdl\.|librt\.|libpthread\.|ld-linux|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcudnn|libnvrtc|libnccl)'
for binary in "$stage"/bin/*; do
  ldd "$binary" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    [[ -e "$stage/lib/$name" ]] || cp -L "$path" "$stage/lib/$name"
  done
done
strip --strip-debug "$stage"/bin/* "$stage"/lib/* 2>/dev/null || true
for binary in "$stage"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$binary"; done
for library in "$stage"/lib/*; do patchelf --set-rpath '$ORIGIN' "$library" 2>/dev/null || true; done
du -sh "$stage"/bin/* "$stage"/lib | sed 's|'"$root"'/||'
tar -C "$root/stage" -cf - gpu | xz -T2 -6 >"$root/stage/gpu.tar.xz"
rm -rf "$stage"
ls -la "$root/stage/gpu.tar.xz" | awk '{print "bundle: stage/gpu.tar.xz,", $5, "bytes"}'
