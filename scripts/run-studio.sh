#!/usr/bin/env bash
# Set up, build, and start Kiln Studio on the bundled sample model (or on the model given).
# Without Qt (or without a display) it runs the `kiln` CLI on the sample instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
model="${1:-resources/models/sample.onnx}"
studio=build/default/app/studio/kiln-studio
if [ -x "$studio" ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ] || [ -n "${QT_QPA_PLATFORM:-}" ]; }; then
  exec "$studio" "$model"
fi
if [ -x "$studio" ]; then
  echo "No display found: showing the model with the kiln CLI instead of Kiln Studio."
else
  echo "Kiln Studio was not built (Qt 6 or Graphviz not found when build/default was configured:" \
       "run scripts/setup.sh, then rm -rf build/default): showing the model with the kiln CLI instead."
fi
build/default/app/cli/kiln inspect "$model"
exec build/default/app/cli/kiln run "$model" --shapes N:1 --output-dir build/sample-outputs
