# Sourced by run.sh and run_backend.sh: the kernels of kernels/cuda with their launches rewritten
# for the emulator (cuda_emulation.h), compiled position-independent (so the emulated backend
# module can link them too) through ccache when there is one. Sets root, here, out, flags, cxx and
# fills kernel_objects.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/scripts/cuda_emulation"
out="$root/build/cuda-emulation"
cxx="g++"
command -v ccache >/dev/null && cxx="ccache g++"
flags="-std=c++20 -O1 -g -w -fPIC -include $here/cuda_emulation.h -I$out/tree -I$root/tests -I$root -isystem /usr/local/cuda/include"
mkdir -p "$out/tree" "$out/obj"
rm -rf "$out/tree/kernels" && cp -r "$root/kernels" "$out/tree/"
for f in $(find "$out/tree/kernels/cuda" -name '*.cu' -o -name '*.cuh'); do python3 "$here/rewrite_launches.py" "$f" "$f" 2>/dev/null; done

# compile SOURCE [extra flags...]: prints the object's path.
compile() {
  local src="$1" object="$out/obj/$(basename "$1").o"
  shift
  nice -n 10 $cxx $flags "$@" -x c++ -c "$src" -o "$object" >&2 || { echo "failed to compile $src" >&2; exit 1; }
  echo "$object"
}

kernel_objects=()
for src in $(find "$out/tree/kernels/cuda" -name '*.cu' -o -name '*.cpp') "$here/host_runtime.cpp"; do
  object=$(compile "$src")
  kernel_objects+=("$object")
done
