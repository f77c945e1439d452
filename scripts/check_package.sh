#!/usr/bin/env bash
# Checks the packaging: the desktop file, AppStream metadata and MIME types validate, and `cpack`
# makes a Debian package holding the programs, the desktop integration, the man pages and the
# sample model, with dependencies computed from the binaries. The ctest tests packaging.*.
# Usage: scripts/check_package.sh metadata SOURCE_DIR | deb BUILD_DIR
# Exit codes: 0 passed, 1 a check failed, 77 skipped (the validating tool is not installed).
set -euo pipefail

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

check_metadata() {
  local packaging="$1/packaging"
  command -v desktop-file-validate >/dev/null || skip "desktop-file-validate not found (Debian package desktop-file-utils)"
  command -v appstreamcli >/dev/null || skip "appstreamcli not found (Debian package appstream)"
  desktop-file-validate "$packaging/kiln-studio.desktop" || fail "kiln-studio.desktop does not validate"
  appstreamcli validate --no-net "$packaging/io.github.kiln.Studio.metainfo.xml" || fail "the AppStream metadata does not validate"
  for page in "$packaging"/man/*.1; do
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    [[ -z "$warnings" ]] || fail "$page: $warnings"
  done
  echo "desktop file, AppStream metadata and man pages validate"
}

check_deb() {
  local build="$1"
  command -v cpack >/dev/null || skip "cpack not found"
  command -v dpkg-deb >/dev/null || skip "dpkg-deb not found (this check needs a Debian system)"
  out=$(mktemp -d)  # global: the EXIT trap removes it after this function returns
  trap 'rm -rf "$out"' EXIT
  (cd "$build" && cpack -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; fail "cpack failed"; }
  local deb
  deb=$(ls "$out"/*.deb 2>/dev/null | head -1)
  [[ -n "$deb" ]] || fail "cpack made no .deb"
  local contents
  contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
  local expected=(./usr/bin/kiln ./usr/share/man/man1/kiln.1 ./usr/share/kiln/models/sample.onnx)
  if [[ -f "$build/app/studio/kiln-studio" ]]; then
    expected+=(./usr/bin/kiln-studio ./usr/share/applications/kiln-studio.desktop
               ./usr/share/metainfo/io.github.kiln.Studio.metainfo.xml ./usr/share/mime/packages/kiln.xml
               ./usr/share/icons/hicolor/scalable/apps/io.github.kiln.Studio.svg ./usr/share/man/man1/kiln-studio.1)
  fi
  for path in "${expected[@]}"; do
    grep -qxF "$path" <<<"$contents" || fail "$(basename "$deb") lacks $path"
  done
  local depends
  depends=$(dpkg-deb -f "$deb" Depends)
  for library in libonnx libprotobuf libopenblas libdnnl libpng16 libjpeg62-turbo; do
    grep -q "$library" <<<"$depends" || fail "Depends lacks $library: $depends"
  done
  echo "$(basename "$deb"): ${#expected[@]} expected files present; Depends: $depends"
}

case "${1:-}" in
  metadata) check_metadata "${2:?source dir}" ;;
  deb) check_deb "${2:?build dir}" ;;
  *) echo "usage: $0 metadata SOURCE_DIR | deb BUILD_DIR"; exit 2 ;;
esac
