#!/usr/bin/env bash
# Smoke-test the bundle built by packaging/build.sh: run it offscreen with --self-test (quantizes the
# bundled example and checks its accuracy), then quantize + evaluate the example with the bundled CLI.
# Exit 0 only if everything passes.
#
#   bash packaging/smoke.sh [BUNDLE_DIR]     # default dist/workbench
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUNDLE="${1:-$ROOT/dist/workbench}"
if [ ! -x "$BUNDLE/workbench" ]; then
    echo "smoke.sh: no executable $BUNDLE/workbench; run packaging/build.sh first" >&2
    exit 2
fi
export QT_QPA_PLATFORM=offscreen
# Run from an empty folder so nothing from the source tree can be picked up instead of the bundle.
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

start=$(date +%s%N)
"$BUNDLE/workbench" --self-test
status=$?
end=$(date +%s%N)
echo "smoke.sh: workbench --self-test exit $status after $(( (end - start) / 1000000 )) ms"
[ "$status" -eq 0 ] || exit 1

version=$("$BUNDLE/workbench-cli" --version) || { echo "smoke.sh: workbench-cli --version failed" >&2; exit 1; }
echo "smoke.sh: workbench-cli --version -> $version"
[[ "$version" == workbench\ * ]] || { echo "smoke.sh: unexpected version line" >&2; exit 1; }
# The CLI end to end on the bundled example: quantize, then compare float and quantized outputs.
example="$BUNDLE/_internal/workbench/resources/example"
"$BUNDLE/workbench-cli" quantize "$example/digits_cnn.onnx" --preset cpu-u8s8 \
    --data "$example/digits_cnn_calib.npz" -o digits_cnn.int8.onnx \
    || { echo "smoke.sh: workbench-cli quantize failed" >&2; exit 1; }
"$BUNDLE/workbench-cli" evaluate "$example/digits_cnn.onnx" digits_cnn.int8.onnx \
    --data "$example/digits_cnn_eval.npz" \
    || { echo "smoke.sh: workbench-cli evaluate failed" >&2; exit 1; }
echo "smoke.sh: OK"
